"""Token embedding: each index's row gathered from a table, its gradient scattered back into the table's."""
