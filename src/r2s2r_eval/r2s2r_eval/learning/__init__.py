"""Learning in sim: expert demonstrations, LeRobot-format datasets and behaviour cloning.

The privileged expert, the demonstration recorder, the LeRobot v2.1 writer and reader, still
perception frames, and the training of the bc policy (PyTorch).
"""
