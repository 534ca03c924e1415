"""Columns and expressions: table schemas (Spark <-> Delta, evolution on write), column
mapping, type widening, partition values, the conditions and expressions users give, and
what a MERGE clause assigns to a column. The ground floor of ``delta``: it imports only the
faces ``options``/``names``/``arguments``/``exceptions`` and packages below ``delta``."""
