"""Job: a Streams application submitted to the cluster.

Long: the Job's wire schema, field by field (its CRD is generated from it).
"""

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, model_validator

from streams_k8s.api.base import CelRule, PrinterColumn, Resource, ResourceRequirements, Status, WireModel
from streams_k8s.api.contract import COORDINATOR_SERVICE_AFFIXES
from streams_k8s.api.processing_element import ImagePullPolicy, ProcessingElementTemplate
from streams_k8s.api.spec_values import DEFAULT_FUSION_MODE, MAX_WIDTH, FusionMode, FusionType, ThreadingMode


class PullPolicy(StrEnum):
    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"


class FileSource(WireModel):
    path: Annotated[str, Field(min_length=1)]


class CertificationAuthority(WireModel):
    """A ConfigMap key holding the PEM CA that is the only trust anchor for the bundle URL."""

    config_map_name: Annotated[str, Field(min_length=1)]
    sub_path: str | None = Field(None, description="Key in the ConfigMap; default ca.crt.")


class HttpSource(WireModel):
    url: Annotated[str, Field(min_length=1, pattern=r"^https?://")]
    certification_authority: CertificationAuthority | None = None


class GitHubSource(WireModel):
    """A bundle in a GitHub repository, fetched through API v3 raw content."""

    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        CelRule(
            rule="has(self.url)",
            message="bundle.github.url is required (github.secret is only used with a url)",
        ),
    )

    url: Annotated[str, Field(min_length=1, pattern=r"^https?://")] | None = None
    secret: str | None = Field(None, description="Secret holding the token sent as 'Authorization: token'.")

    @model_validator(mode="after")
    def _url_required(self) -> Self:
        if self.url is None:
            if self.secret is not None:
                raise ValueError("bundle.github.secret is set without bundle.github.url: a token needs a url")
            raise ValueError("bundle.github.url is required")
        return self


class UploadSource(WireModel):
    """A bundle uploaded to the operator (`kubectl streams submitjob app.sab`): the content's sha256.

    The operator keeps uploads in ConfigMaps of the Job's namespace (`controller.bundles.uploads`)."""

    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the uploaded bundle.")]


_BUNDLE_SOURCES = ("file", "http", "github", "upload")


class Bundle(WireModel):
    """The application bundle (.sab): its name and, at most, one place to fetch it from."""

    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        CelRule(
            rule="[has(self.file), has(self.http), has(self.github), has(self.upload)]"
            ".filter(x, x).size() <= 1",
            message="bundle: file, http, github and upload are mutually exclusive; give one source",
        ),
    )

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="File name of the .sab.")]
    pull_policy: PullPolicy = PullPolicy.IF_NOT_PRESENT
    file: FileSource | None = None
    http: HttpSource | None = None
    github: GitHubSource | None = None
    upload: UploadSource | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        given = [f"bundle.{name}" for name in _BUNDLE_SOURCES if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"{' and '.join(given)} are mutually exclusive: give one bundle source")
        return self


class Fusion(WireModel):
    """How operators are fused into PEs: automatic (the default), legacy, or manual N PEs."""

    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        CelRule(
            rule="[has(self.automatic) && self.automatic, has(self.legacy) && self.legacy, "
            "has(self.manual)].filter(x, x).size() <= 1",
            message="fusion: automatic, legacy and manual are mutually exclusive; choose one",
        ),
    )

    type: FusionType | None = None
    automatic: bool | None = None
    legacy: bool | None = None
    manual: Annotated[int, Field(ge=1)] | None = Field(None, description="Fuse into exactly this many PEs.")

    @model_validator(mode="after")
    def _one_mode(self) -> Self:
        chosen = [f"fusion.{m.value}" for m in FusionMode if self._chosen(m)]
        if len(chosen) > 1:
            raise ValueError(f"{' and '.join(chosen)} are mutually exclusive: choose one fusion mode")
        return self

    def _chosen(self, mode: FusionMode) -> bool:
        value = getattr(self, mode.value)
        return value is not None and value is not False

    @property
    def mode(self) -> FusionMode:
        """The fusion mode in force (automatic when none is chosen)."""
        return next((m for m in FusionMode if self._chosen(m)), DEFAULT_FUSION_MODE)


class DynamicThreading(WireModel):
    elastic: bool | None = None
    thread_count: Annotated[int, Field(ge=1)] | None = None


class ThreadingModel(WireModel):
    """The SPL threading model applied when the main composite has no @threading annotation."""

    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        CelRule(
            rule="[has(self.automatic) && self.automatic, has(self.dedicated) && self.dedicated, "
            "has(self.manual) && self.manual, has(self.dynamic)].filter(x, x).size() <= 1",
            message="threadingModel: automatic, dedicated, manual and dynamic are mutually exclusive",
        ),
    )

    automatic: bool | None = None
    dedicated: bool | None = None
    manual: bool | None = None
    dynamic: DynamicThreading | None = None

    @model_validator(mode="after")
    def _one_model(self) -> Self:
        chosen = [f"threadingModel.{m.value}" for m in ThreadingMode if self._chosen(m)]
        if len(chosen) > 1:
            raise ValueError(f"{' and '.join(chosen)} are mutually exclusive: choose one threading model")
        return self

    def _chosen(self, mode: ThreadingMode) -> bool:
        value = getattr(self, mode.value)
        return value is not None and value is not False

    @property
    def mode(self) -> ThreadingMode | None:
        """The chosen threading model, or None to keep the application's own."""
        return next((m for m in ThreadingMode if self._chosen(m)), None)


class ParallelRegionWidth(WireModel):
    """A parallel-region width set at submission; the alias may use * wildcards."""

    alias: Annotated[str, Field(min_length=1)]
    width: Annotated[int, Field(ge=1, le=MAX_WIDTH)]
    index: Annotated[int, Field(ge=0)] | None = None


class UpgradeMode(StrEnum):
    """What happens to consistent-region state when an edit replaces PEs (the README's table)."""

    STATELESS = "stateless"  # the regions start clean (isCleanStart): no state is restored
    LAST_CHECKPOINT = "last-checkpoint"  # every region resets to its last completed checkpoint
    CHECKPOINT_FIRST = "checkpoint-first"  # checkpoint every region first, hold drains, reset to it


class JobState(StrEnum):
    RUNNING = "Running"
    SUSPENDED = "Suspended"  # every PE pod removed; the job id, PEs and every other object kept


class JobSpec(WireModel):
    bundle: Bundle
    fusion: Fusion = Field(default_factory=Fusion)
    image_pull_policy: ImagePullPolicy = ImagePullPolicy.IF_NOT_PRESENT
    image_pull_secret: str | None = None
    processing_element: ProcessingElementTemplate = Field(default_factory=ProcessingElementTemplate)
    submission_time_out_in_seconds: Annotated[int, Field(gt=0)] = 300
    submission_time_values: dict[str, str] = Field(default_factory=dict)
    threading_model: ThreadingModel = Field(default_factory=ThreadingModel)
    transport_certificate_validity_in_days: Annotated[int, Field(gt=0)] = 30
    resources: ResourceRequirements | None = Field(
        None, description="Job-wide resources, divided among the job's PEs."
    )
    parallel_regions: list[ParallelRegionWidth] = Field(default_factory=list)
    max_unavailable: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="PEs whose pods an edit replaces at once; unset: a quarter of the PEs (at least 1).",
    )
    upgrade_mode: UpgradeMode | None = Field(
        None,
        description="How consistent-region state crosses an upgrade or a suspend: stateless, last-checkpoint "
        "or checkpoint-first. Default: last-checkpoint for a job with consistent regions, else stateless.",
    )
    checkpoint_timeout_seconds: Annotated[int, Field(gt=0)] = Field(
        300,
        description="checkpoint-first: how long the checkpoint may take. Past it the upgrade keeps waiting "
        "with a condition saying which regions have not checkpointed; it never falls back to stateless.",
    )
    state: JobState = Field(
        JobState.RUNNING, description="Running, or Suspended: every PE pod removed, everything else kept."
    )
    restart_nonce: str | None = Field(
        None, description="Any change restarts every PE pod (launch count + 1)."
    )
    rollback: bool = Field(
        True,
        description="An edit not Running within submissionTimeOutInSeconds is undone: the last stable spec "
        "is applied again (phase RolledBack). A rollback that fails too stops in Failed.",
    )
    stable_after_seconds: Annotated[int, Field(ge=0)] = Field(
        60, description="How long a spec must run with every PE pod ready to become the last stable spec."
    )


class JobPhase(StrEnum):
    SUBMITTING = "Submitting"
    SUBMITTED = "Submitted"
    RUNNING = "Running"
    UPGRADING = "Upgrading"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    ROLLING_BACK = "RollingBack"
    ROLLED_BACK = "RolledBack"
    FAILED = "Failed"
    DELETING = "Deleting"


class UndoneEdit(WireModel):
    """The edit a rollback undoes: what its children were written from."""

    spec: dict[str, Any] = Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})
    bundle_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class UpgradeRecord(WireModel):
    """A change being applied (an edit, a width change), written before any child is touched."""

    target_generation: Annotated[int, Field(ge=1)] = Field(description="The spec generation being applied.")
    spec: dict[str, Any] = Field(
        description="The spec being applied (a later edit waits for this one).",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )
    bundle_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] = Field(
        description="sha256 of the bundle the target plan uses."
    )
    generation_id: Annotated[int, Field(ge=0)] = Field(description="The job generation the edit becomes.")
    started: datetime
    kept: list[int] = Field(default_factory=list, description="PE ids whose pods are not touched.")
    replaced: list[int] = Field(default_factory=list, description="PE ids whose pods are replaced.")
    added: list[int] = Field(default_factory=list)
    removed: list[int] = Field(default_factory=list)
    checkpoint: str | None = Field(
        None, description="checkpoint-first: the completed checkpoint the replaced PEs reset to."
    )
    rollback: bool = Field(False, description="This edit applies the last stable spec again.")
    widths: dict[str, int] | None = Field(
        None, description="The widths the job's parallel regions ran at when the edit started, by alias."
    )
    next_pe_id: Annotated[int, Field(ge=0)] | None = Field(
        None, description="The id the first PE the edit adds gets (then the next ones, in plan order)."
    )
    undone: UndoneEdit | None = Field(
        None, description="A rollback's: the edit it undoes, whose Exports, Imports and regions it puts back."
    )
    target_widths: dict[str, int] | None = Field(
        None, description="A width change's: the widths it gives the regions, by alias (same spec)."
    )
    refused: str | None = Field(None, description="A width change going back: why its children were refused.")


class JobStatus(Status):
    phase: JobPhase = JobPhase.SUBMITTING
    id: Annotated[int, Field(ge=0)] | None = Field(None, description="Numeric job id, unique per namespace.")
    generation_id: Annotated[int, Field(ge=0)] | None = Field(
        None, description="0 at submission, +1 at each change of what runs (an edit, a width change)."
    )
    application_name: str | None = None
    processing_elements: Annotated[int, Field(ge=0)] = 0
    processing_elements_ready: Annotated[int, Field(ge=0)] = 0
    pods_ready: Annotated[int, Field(ge=0)] = 0
    message: str | None = None
    submission_started: datetime | None = Field(
        None, description="Start of the current submission attempt (the submission time-out counts from it)."
    )
    planned_nodes: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Schedulable node count automatic fusion used; a re-plan reuses it."
    )
    bundle_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = Field(
        None, description="sha256 of the bundle this submission uses: every re-plan uses this content."
    )
    submission_attempts: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Submission attempts for the current spec (1, then +1 at each automatic retry)."
    )
    next_attempt: datetime | None = Field(
        None, description="When a failure that may go away on its own is retried; unset if it is not retried."
    )
    applied_generation: Annotated[int, Field(ge=1)] | None = Field(
        None, description="The spec generation the running children follow."
    )
    applied_spec: dict[str, Any] | None = Field(
        None,
        description="The spec the running children follow (an edit that cannot be applied leaves it).",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )
    upgrade: UpgradeRecord | None = Field(None, description="The edit being applied, if any.")
    last_stable_spec: dict[str, Any] | None = Field(
        None,
        description="The last spec run with every PE pod ready for stableAfterSeconds (rollbacks apply it).",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )
    last_stable_generation: Annotated[int, Field(ge=1)] | None = None
    last_stable_bundle_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None


# A Service's name is a DNS-1035 label: a lower-case letter, then letters, digits and '-', ending
# with a letter or digit, at most 63 characters.
DNS_1035_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS_LABEL_MAX = 63
# The longest name made of a Job's name is that Service's: it sets the limit (34). Every other child
# is shorter, with the largest ids a plan can make (PE `<job>-<peId>`, pod `<job>-<peId>-<5>`,
# Export/Import `<job>-<peId>-<portId>`, coordinator `<job>-consistent-region-operator`, label
# `streams.ibm.com/cr=<job>-cr<index>`), see tests/test_job_names.py.
MAX_JOB_NAME = DNS_LABEL_MAX - sum(len(affix) for affix in COORDINATOR_SERVICE_AFFIXES)
_JOB_NAME = re.compile(DNS_1035_LABEL)


def job_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a Job (its children's names are made of it), or None."""
    if len(name) > MAX_JOB_NAME:
        return (
            f"'{name}' has {len(name)} characters: a Job's name has at most {MAX_JOB_NAME}, so that its "
            f"coordinator Service {'<job>'.join(COORDINATOR_SERVICE_AFFIXES)} fits in {DNS_LABEL_MAX}"
        )
    if not _JOB_NAME.match(name):
        return (
            f"'{name}' must be a DNS-1035 label (lower-case letters, digits and '-', starting with a "
            f"letter and ending with a letter or digit): it names the job's Services"
        )
    return None


class Job(Resource):
    # The API server checks the name too (CEL at the CRD's root may read metadata.name).
    cel_rules: ClassVar[tuple[CelRule, ...]] = (
        CelRule(
            rule=f"self.metadata.name.size() <= {MAX_JOB_NAME}",
            message=f"metadata.name: a Job's name has at most {MAX_JOB_NAME} characters, so that its "
            f"coordinator Service {'<job>'.join(COORDINATOR_SERVICE_AFFIXES)} fits in {DNS_LABEL_MAX}",
        ),
        CelRule(
            rule=f"self.metadata.name.matches('{DNS_1035_LABEL}')",
            message="metadata.name: a Job's name must be a DNS-1035 label (lower-case letters, digits "
            "and '-', starting with a letter and ending with a letter or digit): it names the job's Services",
        ),
    )
    kind_name: ClassVar[str] = "Job"
    plural: ClassVar[str] = "streamsjobs"
    singular: ClassVar[str] = "streamsjob"
    short_names: ClassVar[tuple[str, ...]] = ("stj",)
    description: ClassVar[str] = "A Streams application submitted to run on the cluster."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn(name="Status", type="string", json_path=".status.phase"),
        PrinterColumn(name="PEs", type="integer", json_path=".status.processingElements"),
        PrinterColumn(name="Ready", type="integer", json_path=".status.processingElementsReady"),
        PrinterColumn(
            name="Applied",
            type="integer",
            json_path=".status.appliedGeneration",
            description="The spec generation the running children follow.",
        ),
        PrinterColumn(
            name="Generation", type="integer", json_path=".metadata.generation", description="The spec's."
        ),
    )

    kind: Literal["Job"] = "Job"
    spec: JobSpec
    status: JobStatus | None = None

    @model_validator(mode="after")
    def _name_fits_its_children(self) -> Self:
        if self.metadata.name is not None and (problem := job_name_problem(self.metadata.name)):
            raise ValueError(f"metadata.name: {problem}")
        return self
