"""Camera calibration from ChArUco boards with OpenCV: intrinsics and the camera's pose in the world."""
