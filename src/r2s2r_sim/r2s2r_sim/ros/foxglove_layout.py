"""The Foxglove layout shipped as config/r2s2r.foxglove.json: the robot in 3D beside the camera images.

Built with foxglove-sdk's layout types from the interface profile, so its topic and frame names are the
ones the graph publishes; ``python -m r2s2r_sim.ros.foxglove_layout`` prints it for the default profile and
the bundled worlds' camera; a test checks the shipped file is that output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import foxglove.layouts as fl

from r2s2r_sim.interface import Interface, load_interface

__all__ = ["layout", "main"]

BUNDLED_CAMERA = "camera"  # the camera name of every bundled world's world.yaml


def layout(iface: Interface, cameras: Sequence[str]) -> fl.Layout:
    """The robot in a 3D panel and each camera's colour and depth images stacked on its right.

    The 3D panel draws the URDF of ``/robot_description`` (its meshes fetched through the server's asset
    service) posed by ``/tf``, over a grid in the interface's world frame.
    """
    world = iface.frame("world")
    scene = fl.ThreeDeePanel(
        title="Robot",
        config=fl.ThreeDeeConfig(
            follow_tf=world,
            fixed_frame=world,
            layers={"grid": fl.BaseRendererGridLayerSettings(frame_id=world, size=2.0, divisions=20)},
            topics={iface.topic("robot_description"): fl.BaseRendererUrdfTopicSettings(visible=True)},
        ),
    )
    images: list[fl.SplitItem] = []
    for camera in cameras:
        for key, info, title in (
            ("color_image", "color_info", "colour"),
            ("depth_image", "depth_info", "depth"),
        ):
            mode = fl.ImageModeConfig(
                image_topic=iface.topic(key, camera), calibration_topic=iface.topic(info, camera)
            )
            panel = fl.ImagePanel(title=f"{camera} {title}", config=fl.ImageConfig(image_mode=mode))
            images.append(fl.SplitItem(content=panel))
    right = fl.SplitContainer(direction="column", items=images)
    return fl.Layout(
        content=fl.SplitContainer(
            direction="row", items=[fl.SplitItem(proportion=2, content=scene), fl.SplitItem(content=right)]
        )
    )


def layout_json(iface: Interface, cameras: Sequence[str]) -> str:
    """:func:`layout` as the indented JSON a Foxglove app imports (Layout -> Import from file)."""
    return json.dumps(json.loads(layout(iface, cameras).to_json()), indent=2) + "\n"


def main() -> int:
    """Print the shipped layout (default interface profile, the bundled worlds' camera)."""
    sys.stdout.write(layout_json(load_interface(), [BUNDLED_CAMERA]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
