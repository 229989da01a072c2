"""streamtool's verbs for Kubernetes: `kubectl streams <verb>` (the `kubectl-streams` plugin) and
`streams-k8s streams <verb>`, one click group for both.

A group of its own rather than top-level `streams-k8s` verbs: the plugin and the subcommand are then
the same object (the same help, flags and errors), and the operator tool's own verbs (`run`,
`plan`, `sandbox`...) stay apart from the users' (`submitjob`, `lsjobs`...), whose names are
streamtool's so that Streams users find them where they look.

Verbs follow kubectl's conventions: `-n/--namespace` (default: the context's), `--kubeconfig`,
`--context`, `-o json|yaml|wide` where they list, errors as one `error: ...` line and exit 1.
"""

from __future__ import annotations

import click

from streams_k8s.cli.streamtool.cancel import canceljob
from streams_k8s.cli.streamtool.capture import capturestate
from streams_k8s.cli.streamtool.listing import lsjobs, lspes
from streams_k8s.cli.streamtool.submit import submitjob
from streams_k8s.cli.streamtool.update import updateoperators


@click.group("streams", context_settings={"help_option_names": ["-h", "--help"]})
def streams() -> None:
    """Run Streams jobs as streamtool does: submitjob, lsjobs, lspes, canceljob, ..."""


for _verb in (submitjob, lsjobs, lspes, canceljob, updateoperators, capturestate):
    streams.add_command(_verb)

__all__ = ["streams"]
