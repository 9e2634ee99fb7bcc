"""A textured MuJoCo plane as Bullet draws it: a quad mesh with texture coordinates and its image.

Bullet's primitive shapes carry no texture coordinates that match MuJoCo's, so a plane geom whose material
has a 2D colour texture (the calibration board a capture shows the camera) is written as an OBJ quad of the
plane's size whose corners carry MuJoCo's mapping: with the default ``texrepeat`` of 1, the image's
top-left corner on the plane's (-x, +y) corner, its right along +x.  Bullet reads ``vt`` the OpenGL way
(``v = 1`` the image's top row), so ``(u, v) = (x / W + 1/2, y / H + 1/2)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import mujoco
import numpy as np

__all__ = ["TexturedQuad", "textured_quad"]

_RGB = int(mujoco.mjtTextureRole.mjTEXROLE_RGB)


@dataclass(frozen=True)
class TexturedQuad:
    """The OBJ quad and PNG image written for one textured plane geom."""

    mesh: Path
    image: Path


def textured_quad(model: mujoco.MjModel, geom: int, folder: Path) -> TexturedQuad | None:
    """Write ``geom``'s quad and image under ``folder``; None unless it is a plane with a 2D colour texture.

    Only the default one-repeat mapping is drawn this way; a repeated texture (``texrepeat`` other than
    1 1, or ``texuniform``) is drawn in the material's colour, as before.
    """
    if int(model.geom_type[geom]) != mujoco.mjtGeom.mjGEOM_PLANE:
        return None
    mat = int(model.geom_matid[geom])
    if mat < 0:
        return None
    tex = int(model.mat_texid[mat, _RGB])
    if tex < 0 or int(model.tex_type[tex]) != mujoco.mjtTexture.mjTEXTURE_2D:
        return None
    if bool(model.mat_texuniform[mat]) or not np.allclose(model.mat_texrepeat[mat], 1.0):
        return None
    w, h, n = int(model.tex_width[tex]), int(model.tex_height[tex]), int(model.tex_nchannel[tex])
    start = int(model.tex_adr[tex])
    pixels = np.asarray(model.tex_data[start : start + w * h * n], dtype=np.uint8).reshape(h, w, n)
    image = folder / f"texture_{tex}.png"
    if not image.exists():
        bgr = cv2.cvtColor(pixels[:, :, :3], cv2.COLOR_RGB2BGR) if n >= 3 else pixels[:, :, 0]
        if not cv2.imwrite(str(image), bgr):
            raise OSError(f"could not write {image}")
    half_w, half_h = float(model.geom_size[geom, 0]), float(model.geom_size[geom, 1])
    mesh = folder / f"plane_{geom}.obj"
    corners = ((-1, -1), (1, -1), (1, 1), (-1, 1))
    lines = [f"v {sx * half_w:.9g} {sy * half_h:.9g} 0" for sx, sy in corners]
    lines += [f"vt {(sx + 1) / 2:g} {(sy + 1) / 2:g}" for sx, sy in corners]
    lines += ["vn 0 0 1", "f 1/1/1 2/2/1 3/3/1", "f 1/1/1 3/3/1 4/4/1"]
    mesh.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return TexturedQuad(mesh, image)
