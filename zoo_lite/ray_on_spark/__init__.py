"""Ray on Spark: Ray nodes started inside the Spark executors, watched, and stopped with Spark."""

from zoo_lite.ray_on_spark.cluster import RayContext, start_ray_on_spark

__all__ = ["RayContext", "start_ray_on_spark"]
