"""The dataflow compiler: lowers a workload Graph onto an arch as a Program of tile commands."""
