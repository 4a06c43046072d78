"""The kit's automated rubric. Today: the offline manifest checker (`grader.manifests`)."""
