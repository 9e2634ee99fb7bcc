"""The capture phases: board views, excitation, scene frames, slide flick and articulation."""
