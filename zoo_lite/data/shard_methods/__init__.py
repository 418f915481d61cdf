"""The methods of :class:`~zoo_lite.data.shard.SparkXShards`, one module per family a user would name.

Each module holds one mixin class, the family's public methods with their docstrings and
examples, and the module-level functions those methods ship to the executors (they capture
plain values, never ``self``). ``SparkXShards`` lists every mixin as a base; the collection
itself (construction, Orca's eager mode, the primitive ``map_partitions``) stays in
:mod:`zoo_lite.data.shard`, whose docstring tells how the two fit together.

- :mod:`.elementwise`: each shard changed on its own: ``transform_shard``, ``[key]``,
  ``select``, ``sort_values``, ``drop_missing_value``, ``sample``, ``assembleFeatureLabelCols``,
  ``split``.
- :mod:`.shuffles`: rows moved between partitions: ``repartition``, ``partition_by``,
  ``partition_by_all_columns``, ``group_by``, ``deduplicates``.
- :mod:`.joins`: two collections into one: ``merge``, ``zip``.
- :mod:`.reductions`: one answer from all shards: ``len``, ``get_schema``, ``unique``,
  ``max``/``min``/``sum``/``mean``/``count``/``nunique``, ``max_values``/``min_values``,
  ``get_null_sum``, ``describe``.
- :mod:`.conversions`: the shards handed on: ``to_spark_df``, ``to_ray``, ``to_model_arrays``.
- :mod:`.actions`: when the shards are computed and where they go: ``cache``, ``uncache``,
  ``is_cached``, ``compute``, ``collect``, ``take``, ``first``, ``head``, ``concat_to_pdf``,
  ``save_pickle``.
- :mod:`.tasks`: what every family builds its Spark tasks from.

The modules never import :mod:`zoo_lite.data.shard` (it imports them: zoo_lite has no import
cycle), so nothing is imported here either.
"""
