"""``streams-k8s plan``: what a bundle or Job becomes (PEs, ports, AADL, name table), offline.

What only one output or one kind of source needs (YAML, JSON, the ConfigMaps, the Job model and
pydantic) is imported where it is used: the plan's start is mostly imports
(`tests/test_cli_imports.py`). A bundle is planned with plain records, its Job's settings defaults.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from streams_k8s.api.spec_values import FusionMode
from streams_k8s.app.aadl import AadlError
from streams_k8s.app.adl import AdlError, parse_adl
from streams_k8s.app.bundle import BundleError, read_bundle
from streams_k8s.app.collector import collector_paused
from streams_k8s.app.fusion import Fusion, FusionChoice, FusionConstraintError
from streams_k8s.app.job_overlays import JobOverlay, OverlayError, read_overlay_file
from streams_k8s.app.plan import Plan, plan_application, refuse_with_widths
from streams_k8s.app.specs import to_wire
from streams_k8s.app.submission import RegionWidth, SubmissionError, WidthOverride
from streams_k8s.app.topology import TopologyError

if TYPE_CHECKING:
    from pydantic import ValidationError

    from streams_k8s.api.job import Job
    from streams_k8s.app.physical import PlannedPe
    from streams_k8s.controller.jobs.upgrade_diff import UpgradeDiff


class InvalidJob(ValueError):
    """A Job manifest its model refuses (the first problem, named by its field)."""

    @classmethod
    def of(cls, err: ValidationError) -> InvalidJob:
        first = err.errors()[0]
        return cls(f"invalid Job: {'.'.join(map(str, first['loc']))}: {first['msg']}")


_ERRORS = (
    BundleError,
    AdlError,
    SubmissionError,
    TopologyError,
    FusionConstraintError,
    AadlError,
    InvalidJob,
    OverlayError,
    OSError,
)

# `--against stj/NAME` (or streamsjob/NAME, streamsjobs.streams.ibm.com/NAME, as kubectl takes it)
_LIVE_JOB = re.compile(r"^(?:stj|streamsjobs?)(?:\.streams\.ibm\.com)?/(?P<name>[^/]+)$")


def _fusion(text: str | None) -> FusionChoice | None:
    if text is None:
        return None
    if text in ("legacy", "automatic"):
        return FusionChoice(FusionMode(text))
    count = text.removeprefix("manual=")
    if text.startswith("manual=") and count.isdecimal() and int(count) >= 1:
        return FusionChoice(FusionMode.MANUAL, manual=int(count))
    raise click.BadParameter("use manual=N (N PEs, at least 1), legacy or automatic", param_hint="--fusion")


def _widths(values: tuple[str, ...]) -> list[WidthOverride]:
    pairs = _pairs(values, "--width")
    if (bad := next((v for _, v in pairs if not v.strip().isdecimal()), None)) is not None:
        raise click.BadParameter(f"'{bad}' is not a width (a whole number)", param_hint="--width")
    return [WidthOverride(alias, int(width)) for alias, width in pairs]


def _pairs(values: tuple[str, ...], what: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        name, sep, value = v.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"'{v}' is not NAME=VALUE", param_hint=what)
        out.append((name, value))
    return out


def _pe_rows(plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "id": pe.id,
            "operators": pe.operators,
            "inputPorts": len(pe.inputs),
            "outputPorts": len(pe.outputs),
            "hostPool": pe.placement.host_pool_location.pool_index
            if pe.placement.host_pool_location
            else None,
            "placement": to_wire(pe.placement),
            "contentId": pe.content_id,
        }
        for pe in plan.pes
    ]


def _config_maps(plan: Plan) -> list[dict[str, Any]]:
    """The job's ConfigMaps as the controller renders them, outside any cluster (no namespace,
    generation or owner)."""
    from streams_k8s.api.contract import name_table_stamp
    from streams_k8s.controller.children.config_maps import name_table_config_map, pe_config_map
    from streams_k8s.controller.children.metadata import ChildMetadata

    metadata = ChildMetadata(job=plan.job_name)
    maps = [pe_config_map(pe, metadata) for pe in plan.pes]
    return [*maps, name_table_config_map(plan, metadata, name_table_stamp())]


def _placement_summary(pe: PlannedPe, plan: Plan) -> str:
    """host=…, pool=name[i], coloc=…, exloc=…, isolated=… (empty parts left out)."""
    p = pe.placement
    parts = []
    if p.host:
        parts.append(f"host={p.host}")
    if p.host_pool_location is not None:
        pool = plan.topology.hostpool(p.host_pool_location.pool_index)
        name = pool.name if pool else str(p.host_pool_location.pool_index)
        index = p.host_pool_location.inpool_index
        parts.append(f"pool={name}" + (f"[{index}]" if index is not None else ""))
    if p.co_locations:
        parts.append("coloc=" + ",".join(p.co_locations))
    if p.ex_locations:
        parts.append("exloc=" + ",".join(p.ex_locations))
    if p.isolation:
        parts.append(f"isolated={p.isolation}")
    return " ".join(parts) or "-"


def _print_table(plan: Plan) -> None:
    click.echo(f"{'PE':>4}  {'IN':>3} {'OUT':>3}  {'CONTENT':12}  {'PLACEMENT':24}  OPERATORS")
    for pe in plan.pes:
        placement = _placement_summary(pe, plan)
        click.echo(
            f"{pe.id:>4}  {len(pe.inputs):>3} {len(pe.outputs):>3}  {pe.content_id[:12]}  "
            f"{placement:24}  {', '.join(pe.operators)}"
        )


def _emit(data: Any, output: str) -> None:
    if output == "json":
        import orjson

        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        import yaml

        # libyaml's emitter writes the same bytes some forty times faster (10,000 operators: 0.1 s, not 3.5 s)
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        click.echo(yaml.dump(data, Dumper=dumper, sort_keys=False, width=10_000), nl=False)


def _load(source: Path) -> tuple[bytes, Job | None]:
    """The ADL bytes and the Job (when ``source`` is a Job manifest pointing at a file bundle)."""
    if source.suffix in (".yaml", ".yml", ".json"):
        import yaml

        try:
            manifest = yaml.safe_load(source.read_text())
        except yaml.YAMLError as err:  # one line, as every other error of a source
            raise BundleError(f"{source.name} is not YAML: {' '.join(str(err).split())}") from None
        job = _job(manifest)
        if job.spec.bundle.file is None:
            raise BundleError("the Job's bundle is not a local file (bundle.file.path); plan needs the SAB")
        path = Path(job.spec.bundle.file.path)
        if not path.is_absolute():
            path = source.parent / path
        if path.is_dir():
            path = path / job.spec.bundle.name
        return read_bundle(path).adl, job
    if source.suffix == ".adl":
        return source.read_bytes(), None
    return read_bundle(source).adl, None


def _job(manifest: Any) -> Job:
    """The Job model of a manifest, or `InvalidJob`."""
    from pydantic import ValidationError

    from streams_k8s.api.job import Job

    try:
        return Job.model_validate(manifest)
    except ValidationError as err:
        raise InvalidJob.of(err) from None


@click.command("plan")
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--fusion", "fusion_text", help="manual=N, legacy or automatic (default: the Job's, else automatic)."
)
@click.option(
    "--width", "widths", multiple=True, help="ALIAS=N parallel width (ALIAS may use *); repeatable."
)
@click.option(
    "--submission-time", "values", multiple=True, help="NAME=VALUE submission-time value; repeatable."
)
@click.option(
    "-g",
    "--overlay",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Streams jobConfigOverlays JSON (job name, submission values, fusion, threading); options win.",
)
@click.option("--nodes", type=click.IntRange(min=1), help="Cluster node count (bounds automatic fusion).")
@click.option("--diff", is_flag=True, help="Plan with the base widths, re-fuse with --width, print the diff.")
@click.option(
    "--against",
    metavar="OLD",
    help="Show what applying SOURCE as an edit of OLD does, PE by PE. OLD: a Job manifest or a bundle "
    "(.sab/.adl; a bundle stands for the other side's Job running it, or for a Job of default settings "
    "when both are bundles), or stj/NAME: the Job as it runs in the cluster (--kubeconfig, -n), SOURCE "
    "then a Job manifest (its spec applied) or a .sab (the running spec with that bundle).",
)
@click.option("--kubeconfig", help="With --against stj/NAME: kubeconfig file [$KUBECONFIG, ~/.kube/config].")
@click.option("--context", help="With --against stj/NAME: kubeconfig context.")
@click.option(
    "-n", "--namespace", default="default", show_default=True, help="With --against stj/NAME: its namespace."
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml", "html", "svg"]),
    default="table",
    help="html/svg: the job graph with its fusion, as one self-contained file (redirect it).",
)
@collector_paused()  # a short-lived process: its plan makes no garbage cycles to collect
def plan(
    source: Path,
    fusion_text: str | None,
    widths: tuple[str, ...],
    values: tuple[str, ...],
    overlay: Path | None,
    nodes: int | None,
    diff: bool,
    against: str | None,
    output: str,
    **cluster: str | None,
) -> None:
    """Show the PEs a bundle (.sab/.adl) or Job manifest becomes."""
    if (diff or against is not None) and output in ("html", "svg"):
        raise click.BadParameter("a diff prints as a table, json or yaml", param_hint="-o")
    if against is not None:
        _emit_upgrade(source, against, nodes, output, cluster)
        return
    try:
        adl, job = _load(source)
        app = parse_adl(adl, what=source.name)
        spec = job.spec if job else None
        given = read_overlay_file(overlay) if overlay else JobOverlay()
        fusion: Fusion = _fusion(fusion_text) or given.fusion or (spec.fusion if spec else FusionChoice())
        width_list = _widths(widths)
        base_widths: list[RegionWidth] = list(spec.parallel_regions) if spec else []
        kwargs: dict[str, Any] = {
            "job_name": given.job_name
            or (job.metadata.name if job and job.metadata and job.metadata.name else "job"),
            "submission_values": {
                **(spec.submission_time_values if spec else {}),
                **given.submission_values,
                **dict(_pairs(values, "--submission-time")),
            },
            "resources": spec.processing_element.resources if spec else None,
            "threading": given.threading or (spec.threading_model if spec else None),
            "nodes": nodes,
        }
        if diff:
            before = plan_application(app, fusion, widths=base_widths, **kwargs)
            after, changes = refuse_with_widths(
                before, width_list, resources=kwargs["resources"], nodes=nodes
            )
            _emit_diff({**changes.to_wire(), "pes": _pe_rows(after)}, output)
            return
        result = plan_application(app, fusion, widths=[*base_widths, *width_list], **kwargs)
    except _ERRORS as err:
        _fail(err)
    for notice in result.notices:
        click.echo(f"notice: {notice}", err=True)
    if output in ("html", "svg"):
        from streams_k8s.console.picture import plan_picture

        click.echo(plan_picture(result, output), nl=False)
    elif output == "table":
        _print_table(result)
    elif output == "json":
        _emit({"pes": _pe_rows(result), "nameTable": result.name_table}, output)
    else:
        _emit({"pes": _pe_rows(result), "configMaps": _config_maps(result)}, output)


def _emit_diff(data: dict[str, Any], output: str) -> None:
    """A change's diff (`app.plan_diff.PlanDiff.to_wire`), as `--diff` and `--against` print it;
    the table shows what else ``data`` says of the job's state, when it says it."""
    if output != "table":
        _emit(data, output)
        return
    click.echo(data["summary"])
    for key in ("kept", "updated", "added", "removed"):
        click.echo(f"{key:9} {' '.join(map(str, data[key])) or '-'}")
    for row in data["replaced"]:
        click.echo(f"replaced  {row['id']}: {', '.join(row['reasons'])}")
    if "stateKept" in data:
        click.echo(f"state kept: {', '.join(data['stateKept']) or '-'} (upgradeMode {data['upgradeMode']})")


def _bare_job(bundle: Path, like: Job | None) -> Job:
    """The Job a bare bundle stands for: ``like`` (the other side's Job) running it, else a Job
    named ``job`` of default settings."""
    from streams_k8s.api.job import Bundle

    source = {"name": bundle.name, "file": {"path": str(bundle)}}
    if like is None:
        return _job({"metadata": {"name": "job"}, "spec": {"bundle": source}})
    spec = like.spec.model_copy(update={"bundle": Bundle.model_validate(source)})
    return like.model_copy(update={"spec": spec})


def _offline_upgrade(source: Path, against: Path, nodes: int | None) -> UpgradeDiff:
    # the job controller's own diff (pure: it loads no cluster client)
    from streams_k8s.controller.jobs.upgrade_diff import preview

    (new_adl, new_job), (old_adl, old_job) = _load(source), _load(against)
    _, changes = preview(
        old_job or _bare_job(against, new_job),
        parse_adl(old_adl, what=against.name),
        new_job or _bare_job(source, old_job),
        parse_adl(new_adl, what=source.name),
        job_id=0,
        nodes=nodes,
    )
    return changes


def _live_upgrade(source: Path, name: str, cluster: dict[str, str | None]) -> UpgradeDiff:
    # the only form that loads the cluster client
    from streams_k8s.cli.plan_live import LiveJobError, live_preview

    try:
        return live_preview(
            source,
            name,
            namespace=cluster["namespace"] or "default",
            kubeconfig=cluster["kubeconfig"],
            context=cluster["context"],
        )
    except LiveJobError as err:
        _fail(err)


def _emit_upgrade(
    source: Path, against: str, nodes: int | None, output: str, cluster: dict[str, str | None]
) -> None:
    """What the job controller does when the Job ``against`` is edited into ``source``."""
    from pydantic import ValidationError

    from streams_k8s.controller.planning import JobFailure

    try:
        if live := _LIVE_JOB.match(against):
            changes = _live_upgrade(source, live["name"], cluster)
        else:
            changes = _offline_upgrade(source, Path(against), nodes)
    except ValidationError as err:
        _fail(InvalidJob.of(err))
    except (*_ERRORS, JobFailure) as err:
        _fail(err)
    _emit_diff(changes.to_wire(), output)


def _fail(err: Exception) -> NoReturn:
    message = str(err).splitlines()[0] if str(err) else type(err).__name__
    click.echo(f"error: {message}", err=True)
    sys.exit(1)
