"""Reading and writing files: rosbag2 recordings, UR CSV recordings, all-or-nothing output files."""
