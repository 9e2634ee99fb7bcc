"""Servo damping against the inertia it drives: armature where explicit damping would limit-cycle.

Real MuJoCo physics: a servo whose force range clips is integrated explicitly, and with ``kv * dt`` past
twice the inertia it drives it turns into a bang-bang oscillation at its force limits.  Two joints whose
axes line up (a 7-DoF arm's roll joints) share a light mode no single joint's inertia shows.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from r2s2r_sim.authoring.grasp_fit import stable_armature

# Two hinges about the same axis: a light first link (0.001 kg·m² about z) carrying a heavier second one
# (0.1).  Each joint's own inertia (0.101, 0.1) is over kv * dt / 2 = 0.05, but the mode where the two turn
# against each other moves only the light link.
_ALIGNED = """
<mujoco>
  <option timestep="0.002" integrator="implicitfast" gravity="0 0 0"/>
  <worldbody>
    <body name="link1">
      <joint name="j1" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.001 0.001 0.001"/>
      <body name="link2">
        <joint name="j2" axis="0 0 1"/>
        <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="j1" kp="2000" kv="50" forcelimited="true" forcerange="-20 20"/>
    <position joint="j2" kp="2000" kv="50" forcelimited="true" forcerange="-20 20"/>
  </actuator>
</mujoco>
"""


def _settle(xml: str, armature: dict[str, float]) -> tuple[float, float]:
    """Turn the joints 0.3 rad against each other for 2 s: (the top joint speed over the last 0.1 s, the
    final error)."""
    model = mujoco.MjModel.from_xml_string(xml)
    for name, value in armature.items():
        model.dof_armature[model.jnt_dofadr[model.joint(name).id]] = value
    data = mujoco.MjData(model)
    target = np.array([0.3, -0.3])
    data.ctrl[:] = target
    speeds = []
    for step in range(1000):
        mujoco.mj_step(model, data)
        if step >= 950:
            speeds.append(float(np.abs(data.qvel).max()))
    return max(speeds), float(np.abs(data.qpos - target).max())


def test_aligned_joints_get_armature_that_stops_the_limit_cycle() -> None:
    model = mujoco.MjModel.from_xml_string(_ALIGNED)
    data = mujoco.MjData(model)
    arm = [model.joint("j1").id, model.joint("j2").id]
    # Without armature the pair limit-cycles at its force limits and never settles.
    speed, error = _settle(_ALIGNED, {})
    assert speed > 1.0, (speed, error)
    armature = stable_armature(model, data, arm, float(model.opt.timestep))
    assert set(armature) == {"j1", "j2"}
    assert all(value == pytest.approx(50 * 0.002) for value in armature.values())
    speed, error = _settle(_ALIGNED, armature)
    assert speed < 1e-3 and error < 1e-3, (speed, error)


def test_a_joint_whose_inertia_carries_its_damping_gets_none() -> None:
    """The same pair with the first link heavy (1 kg·m²): no light mode, nothing added."""
    heavy = _ALIGNED.replace('diaginertia="0.001 0.001 0.001"', 'diaginertia="1 1 1"')
    model = mujoco.MjModel.from_xml_string(heavy)
    assert stable_armature(model, mujoco.MjData(model), [0, 1], float(model.opt.timestep)) == {}
    speed, error = _settle(heavy, {})
    assert speed < 1e-3 and error < 1e-3, (speed, error)
