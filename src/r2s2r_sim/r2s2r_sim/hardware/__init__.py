"""The emulated hardware: a stand-in for a physical arm and camera.

Built from a world and a hardware profile.
"""
