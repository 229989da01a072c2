"""Consistent regions: the coordinator around the native FSM, its wire formats and metrics."""
