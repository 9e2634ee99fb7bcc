"""Pieces the scripted policies share: the arm model of a world, the paced set-point mover, colour blobs."""
