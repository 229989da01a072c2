"""Shared building blocks of the CRD models: the base model, metadata, conditions, resources.

Every model speaks the user's camelCase on the wire (``model_validate`` of the YAML a user
writes, ``to_wire`` for what goes back to the API server) and snake_case in Python.
"""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Final, Literal, NamedTuple, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, GetJsonSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from streams_k8s.api.quantity import QUANTITY

GROUP: Final = "streams.ibm.com"
VERSION: Final = "v1"
API_VERSION: Final = "streams.ibm.com/v1"


# CelRule and PrinterColumn are declarations in our own code, never user input: plain tuples, not
# models (a model is validated at import and each costs its schema build).
class CelRule(NamedTuple):
    """A CRD `x-kubernetes-validations` rule that mirrors a model validator."""

    rule: str
    message: str


class WireModel(BaseModel):
    """Base of every model: camelCase aliases, unknown fields rejected, enums kept as values.

    ``cel_rules`` lists the CEL rules the CRD carries for this object; each one restates a
    check done by a model validator, so the API server and the models refuse the same input.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=False,
        validate_default=True,
        defer_build=True,
    )

    cel_rules: ClassVar[tuple[CelRule, ...]] = ()

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(core_schema)
        if cls.cel_rules:
            target = handler.resolve_ref_schema(json_schema)
            target["x-kubernetes-validations"] = [rule._asdict() for rule in cls.cel_rules]
        return json_schema

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict a user or the API server sees (camelCase, no nulls)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_record(cls, record: object) -> Self:
        """The model of a plain record with its fields' names (the plan's, `app.specs`), validated:
        where the plan becomes the objects the controller writes."""
        return cls.model_validate(record, from_attributes=True)


def _check_quantity(value: str | int) -> str | int:
    if isinstance(value, str) and not QUANTITY.match(value):
        raise ValueError(f"'{value}' is not a Kubernetes quantity (examples: 100m, 0.5, 128Mi, 2Gi)")
    return value


Quantity = Annotated[str | int, AfterValidator(_check_quantity)]


class ResourceRequirements(WireModel):
    """Container resources, as core/v1 ResourceRequirements (claims are not used by PEs)."""

    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(WireModel):
    """A standard status condition (metav1.Condition)."""

    type: Annotated[str, Field(min_length=1, max_length=316)]
    status: ConditionStatus
    reason: Annotated[str, Field(min_length=1, max_length=1024)]
    message: Annotated[str, Field(max_length=32768)] = ""
    last_transition_time: datetime
    observed_generation: Annotated[int, Field(ge=0)] | None = None


class Status(WireModel):
    """Fields every status of ours carries."""

    observed_generation: Annotated[int, Field(ge=0)] | None = None
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class OwnerReference(WireModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(WireModel):
    """The metadata fields the project reads and writes; anything else the server adds is kept."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)


class PrinterColumn(NamedTuple):
    """A CRD `additionalPrinterColumns` entry (camelCased by `crd_manifest`)."""

    name: str
    type: Literal["string", "integer", "number", "boolean", "date"]
    json_path: str
    description: str = ""


class Resource(WireModel):
    """A namespaced custom resource of group streams.ibm.com/v1.

    Subclasses pin ``spec``/``status`` by redeclaring them with their own models (not by generic
    parameters: parametrizing a pydantic generic builds its schema at import) and describe the CRD
    in the ClassVars below.
    """

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    kind_name: ClassVar[str]
    plural: ClassVar[str]
    singular: ClassVar[str]
    short_names: ClassVar[tuple[str, ...]]
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = ()
    # JSON paths of the scale subresource's replicas (spec, status), if the kind scales.
    scale_paths: ClassVar[tuple[str, str] | None] = None
    description: ClassVar[str] = ""

    api_version: Literal["streams.ibm.com/v1"] = API_VERSION
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WireModel
    status: Status | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Self:
        """Validate a dict as read from YAML or the API server."""
        return cls.model_validate(obj)

    def as_owner(self, uid: str | None = None) -> dict[str, Any]:
        """This object as the controlling owner of another (its ``ownerReferences`` entry), with
        ``uid`` or its own (it must then have been read from the API server)."""
        uid = uid or self.metadata.uid
        if not self.metadata.name or not uid:
            raise ValueError(
                f"the {self.kind} must be read from the API server (name and uid) to own objects"
            )
        reference = OwnerReference(
            api_version=self.api_version,
            kind=self.kind,
            name=self.metadata.name,
            uid=uid,
            controller=True,
            block_owner_deletion=True,
        )
        return reference.to_wire()
