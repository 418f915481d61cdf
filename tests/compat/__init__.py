"""Orca behaviours zoo_lite claims, tested in Orca's call style (``zoo.orca`` -> ``zoo_lite``)."""
