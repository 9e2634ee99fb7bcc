"""A fixed-base arm's first link does not collide with its base, as MuJoCo's parent filter intends."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
from r2s2r_sim.world.robot_source import load_robot_spec

# A base welded to the world and a first link whose geom overlaps it by 2 cm: MuJoCo does not filter a
# parent welded to the world, so unedited the two touch and the joint between them rubs.
_ARM = """
<mujoco>
  <worldbody>
    <body name="base">
      <geom type="cylinder" size="0.08 0.05" pos="0 0 0.05" {base}/>
      <body name="link1" pos="0 0 0.08">
        <joint name="j1" axis="0 0 1"/>
        <geom type="cylinder" size="0.06 0.05" pos="0 0 0.03" {link}/>
        <body name="link2" pos="0 0 0.1">
          <joint name="j2" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _load(tmp_path: Path, base: str = "", link: str = "") -> mujoco.MjModel:
    path = tmp_path / "arm.xml"
    path.write_text(_ARM.format(base=base, link=link), encoding="utf-8")
    return load_robot_spec(path, field="robot.mjcf").compile()


def _touching(model: mujoco.MjModel) -> set[tuple[str, str]]:
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    name = lambda geom: model.body(model.geom_bodyid[geom]).name  # noqa: E731
    return {tuple(sorted((name(c.geom1), name(c.geom2)))) for c in data.contact[: data.ncon]}


def test_the_first_link_does_not_touch_a_base_welded_to_the_world(tmp_path: Path) -> None:
    plain = mujoco.MjModel.from_xml_string(_ARM.format(base="", link=""))
    assert ("base", "link1") in _touching(plain)  # what MuJoCo does with the file as written
    model = _load(tmp_path)
    assert _touching(model) == set()
    assert model.nexclude == 1  # only the lapsed pair: link2's parent moves, so MuJoCo filters it


def test_links_that_cannot_collide_compile_unchanged(tmp_path: Path) -> None:
    masks = 'contype="2" conaffinity="1"'  # the bundled arm's way: links never collide with each other
    model = _load(tmp_path, base=masks, link=masks)
    assert model.nexclude == 0
    reference = mujoco.MjModel.from_xml_string(_ARM.format(base=masks, link=masks))
    assert np.array_equal(model.geom_contype, reference.geom_contype) and reference.nexclude == 0
