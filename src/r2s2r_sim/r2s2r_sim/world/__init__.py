"""The world.

Its files (world.yaml, the robot, the scene), their composition into MuJoCo, and the SimWorld that steps it.
"""
