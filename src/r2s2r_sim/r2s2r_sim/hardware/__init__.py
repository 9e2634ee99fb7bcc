"""The emulated hardware: a stand-in for a physical arm and camera, built from a world and a hardware profile."""
