"""ament_python package r2s2r_eval: installable with colcon (ROS distro) or pip (editable, pip mode)."""

from pathlib import Path

from setuptools import find_packages, setup

package_name = "r2s2r_eval"
here = Path(__file__).resolve().parent
data_files = [
    ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
    ("share/" + package_name, ["package.xml"]),
]

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={package_name: ["py.typed"]},
    include_package_data=True,
    data_files=data_files,
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="r2s2r developers",
    maintainer_email="r2s2r@example.org",
    description="Policy node and plug-in API, episode evaluator, and sim-versus-real comparison for r2s2r.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "policy_node = r2s2r_eval.nodes.policy_node:main",
            "evaluator_node = r2s2r_eval.nodes.evaluator_node:main",
        ],
        # Policy plug-ins: name = module:Class (a subclass of r2s2r_eval.policy.Policy).
        "r2s2r.policies": [
            "reference = r2s2r_eval.policies.reference.policy:ReferencePolicy",
            "bc = r2s2r_eval.policies.bc.policy:BCPolicy",
            "topdown = r2s2r_eval.policies.topdown.policy:TopdownPolicy",
            "push_reference = r2s2r_eval.policies.push.policy:PushPolicy",
            "stack_reference = r2s2r_eval.policies.stack.policy:StackPolicy",
            "drawer_reference = r2s2r_eval.policies.drawer.policy:DrawerPolicy",
        ],
        # Subcommands of the `r2s2r` CLI: name = module:register (adds a parser, sets func).
        "r2s2r.commands": [
            "closed-loop = r2s2r_eval.studies.closed_loop:register",
            "compare = r2s2r_eval.cli.compare:register",
            "demos = r2s2r_eval.cli.demos:register",
            "metrics = r2s2r_eval.cli.metrics:register",
            "sweep = r2s2r_eval.cli.sweep:register",
            "train = r2s2r_eval.cli.train:register",
            "transfer = r2s2r_eval.studies.transfer:register",
        ],
    },
)
