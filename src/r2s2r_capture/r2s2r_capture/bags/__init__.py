"""rosbag2 files: reading, writing, their messages, playback timing and the signature of a capture."""
