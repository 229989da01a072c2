"""The PEs' metrics in the operator: read from each PE pod's ``sys-metrics`` port (`scraper`), a job's
flow derived (`streams_k8s.app.flow`), served on the operator's ``/metrics`` (`exported`)."""
