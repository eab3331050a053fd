"""payload_id_ros: thin rclpy nodes around payload_id_core, and the payload-id command line."""
