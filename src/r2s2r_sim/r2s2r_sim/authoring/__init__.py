"""Making a world for a new arm: world new, world check, the scene layout, the gripper guess and grasp fit."""
