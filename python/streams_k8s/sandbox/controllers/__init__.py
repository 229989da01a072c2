"""The controllers only the embedded API server needs (a real cluster runs its own): scheduler,
workload, endpoints and EndpointSlice controllers, garbage and namespace collection."""
