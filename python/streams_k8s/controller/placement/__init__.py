"""Host placement: SPL host constraints as pod scheduling (`constraints`, pure), the nodes prepared
for a job's host pools (`nodes`, a reconciler), and label values (`label_values`)."""
