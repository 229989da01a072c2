"""The console: the job graph (model, layout, SVG, self-contained page) and the live web UI."""
