"""The one builder of the messages r2s2r writes into bags: interface messages from arrays, by topic key.

Messages are made with the bag writer's typestore (rosbags) and CDR-serialized into the topic registered
under a key, so the capture of the emulated cell and the demonstration recorder write the same layouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from r2s2r_capture.bags.writer import BagWriter, TopicSpec

__all__ = ["BagMessages"]

_NS = 1_000_000_000


class BagMessages:
    """Writes messages to the topics of an open :class:`~r2s2r_capture.bags.writer.BagWriter`.

    Args:
        bag: the open writer; topics are added with :meth:`add_topic`.
    """

    def __init__(self, bag: BagWriter) -> None:
        self.bag = bag
        self.ts = bag.typestore
        self.handles: dict[str, int] = {}
        self.types: dict[str, str] = {}
        self.counts: dict[str, int] = {}  # messages written per key

    def add_topic(self, key: str, topic: str, msgtype: str, offered_qos_profiles: Sequence[Any] = ()) -> None:
        """Register ``topic`` (of ``msgtype``, offering those QoS profiles) under ``key``."""
        spec = TopicSpec(topic=topic, msgtype=msgtype, offered_qos_profiles=tuple(offered_qos_profiles))
        self.handles[key] = self.bag.add_topic(spec)
        self.types[key] = msgtype
        self.counts[key] = 0

    def _t(self, name: str) -> Any:
        return self.ts.types[name]

    def write(self, key: str, t_ns: int, msg: Any) -> None:
        """Serialize ``msg`` into the topic of ``key`` at log time ``t_ns``."""
        self.bag.write(self.handles[key], t_ns, bytes(self.ts.serialize_cdr(msg, self.types[key])))
        self.counts[key] += 1

    def raw(self, key: str, t_ns: int, data: bytes | memoryview) -> None:
        """Write an already CDR-serialized message (as it came off the wire) to the topic of ``key``."""
        self.bag.write(self.handles[key], t_ns, data)
        self.counts[key] += 1

    def header(self, t_ns: int, frame_id: str = "") -> Any:
        """A ``std_msgs/Header`` stamped ``t_ns`` (ns) in ``frame_id``."""
        stamp = self._t("builtin_interfaces/msg/Time")(sec=t_ns // _NS, nanosec=t_ns % _NS)
        return self._t("std_msgs/msg/Header")(stamp=stamp, frame_id=frame_id)

    def string(self, key: str, t_ns: int, text: str) -> None:
        """A ``std_msgs/String``."""
        self.write(key, t_ns, self._t("std_msgs/msg/String")(data=text))

    def joint_state(
        self,
        t_ns: int,
        names: Sequence[str],
        q: np.ndarray,
        qd: np.ndarray,
        e: np.ndarray,
        key: str = "joint_states",
    ) -> None:
        """A ``sensor_msgs/JointState``: positions (rad), velocities (rad/s), efforts (N m)."""
        msg = self._t("sensor_msgs/msg/JointState")(
            header=self.header(t_ns),
            name=list(names),
            position=np.asarray(q, dtype=np.float64),
            velocity=np.asarray(qd, dtype=np.float64),
            effort=np.asarray(e, dtype=np.float64),
        )
        self.write(key, t_ns, msg)

    def array(self, key: str, t_ns: int, values: np.ndarray) -> None:
        """A ``std_msgs/Float64MultiArray`` (the ros2_control command layout: no dimensions)."""
        layout = self._t("std_msgs/msg/MultiArrayLayout")(dim=[], data_offset=0)
        msg = self._t("std_msgs/msg/Float64MultiArray")(layout=layout, data=np.asarray(values, np.float64))
        self.write(key, t_ns, msg)

    def image(self, key: str, t_ns: int, frame_id: str, img: np.ndarray, encoding: str) -> None:
        """A ``sensor_msgs/Image`` of ``img`` (rows contiguous, little-endian) in ``encoding``."""
        img = np.ascontiguousarray(img)
        h, w = img.shape[:2]
        msg = self._t("sensor_msgs/msg/Image")(
            header=self.header(t_ns, frame_id),
            height=h,
            width=w,
            encoding=encoding,
            is_bigendian=0,
            step=int(img.strides[0]),
            data=img.view(np.uint8).reshape(-1),
        )
        self.write(key, t_ns, msg)

    def compressed_image(self, key: str, t_ns: int, frame_id: str, fmt: str, data: bytes) -> None:
        """A ``sensor_msgs/CompressedImage`` of ``fmt`` and ``data`` (:mod:`r2s2r_sim.compressed_images`)."""
        msg = self._t("sensor_msgs/msg/CompressedImage")(
            header=self.header(t_ns, frame_id), format=fmt, data=np.frombuffer(data, dtype=np.uint8)
        )
        self.write(key, t_ns, msg)

    def camera_info(
        self,
        t_ns: int,
        frame_id: str,
        w: int,
        h: int,
        K: np.ndarray,
        D: np.ndarray,
        key: str = "color_info",
    ) -> None:
        """A plumb_bob ``sensor_msgs/CameraInfo`` with intrinsics ``K`` (3x3) and distortion ``D``."""
        P = np.zeros((3, 4))
        P[:3, :3] = K
        roi = self._t("sensor_msgs/msg/RegionOfInterest")(
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False
        )
        msg = self._t("sensor_msgs/msg/CameraInfo")(
            header=self.header(t_ns, frame_id),
            height=h,
            width=w,
            distortion_model="plumb_bob",
            d=np.asarray(D, dtype=np.float64),
            k=np.asarray(K, dtype=np.float64).ravel(),
            r=np.eye(3).ravel(),
            p=P.ravel(),
            binning_x=0,
            binning_y=0,
            roi=roi,
        )
        self.write(key, t_ns, msg)
