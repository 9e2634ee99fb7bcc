"""Scene reconstruction from depth frames with Open3D: TSDF fusion and the objects on the table."""
