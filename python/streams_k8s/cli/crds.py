"""`streams-k8s crds`: write or print the CustomResourceDefinitions generated from the models."""

from __future__ import annotations

from pathlib import Path

import click

from streams_k8s.api.crd import crd_files, write_crds


@click.command()
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write one YAML file per CRD into; without it, print them as one stream.",
)
def crds(output: Path | None) -> None:
    """Generate the CRD manifests of every streams.ibm.com kind."""
    if output is None:
        click.echo("---\n".join(crd_files().values()), nl=False)
        return
    try:
        for path in write_crds(output):
            click.echo(str(path))
    except OSError as err:
        raise click.ClickException(f"cannot write CRDs to {output}: {err.strerror or err}") from err
