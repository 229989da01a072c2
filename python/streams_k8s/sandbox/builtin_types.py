"""The built-in kinds the sandbox serves, with the names, scope, subresources and field selectors
the real API server gives them, by API group."""

from __future__ import annotations

from streams_k8s.sandbox.resources import ResourceType, ScaleSpec, Subresource

_CORE = ""


def builtin_types() -> list[ResourceType]:
    """The built-in kinds the system uses, with the subresources the real API server has."""
    return [
        *_core_placement_types(),
        *_core_service_and_config_types(),
        *_apps_types(),
        *_networking_types(),
        *_rbac_types(),
        *_review_types(),
        *_extension_types(),
    ]


def _core_placement_types() -> list[ResourceType]:
    """Where pods run: namespaces, nodes and pods."""
    return [
        ResourceType(
            _CORE,
            ["v1"],
            "namespaces",
            "namespace",
            "Namespace",
            False,
            ["ns"],
            status_subresource=True,
            field_selectors=("status.phase",),
            extra_subresources=(Subresource("finalize", "Namespace", ("update",)),),
            return_deleted_object=True,
        ),
        ResourceType(
            _CORE,
            ["v1"],
            "nodes",
            "node",
            "Node",
            False,
            ["no"],
            status_subresource=True,
            field_selectors=("spec.unschedulable",),
        ),
        ResourceType(
            _CORE,
            ["v1"],
            "pods",
            "pod",
            "Pod",
            True,
            ["po"],
            ["all"],
            status_subresource=True,
            generation=True,
            field_selectors=(
                "spec.nodeName",
                "status.phase",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "status.podIP",
            ),
            extra_subresources=(
                Subresource("attach", "PodAttachOptions", ("create", "get")),
                Subresource("binding", "Binding"),
                Subresource("eviction", "Eviction", group="policy", version="v1"),
                Subresource("exec", "PodExecOptions", ("create", "get")),
                Subresource("log", "Pod", ("get",)),
                Subresource("portforward", "PodPortForwardOptions", ("create", "get")),
            ),
            return_deleted_object=True,
        ),
    ]


def _core_service_and_config_types() -> list[ResourceType]:
    return [
        ResourceType(
            _CORE,
            ["v1"],
            "services",
            "service",
            "Service",
            True,
            ["svc"],
            ["all"],
            status_subresource=True,
            return_deleted_object=True,
        ),
        ResourceType(_CORE, ["v1"], "endpoints", "endpoints", "Endpoints", True, ["ep"]),
        ResourceType(_CORE, ["v1"], "configmaps", "configmap", "ConfigMap", True, ["cm"]),
        ResourceType(_CORE, ["v1"], "secrets", "secret", "Secret", True, field_selectors=("type",)),
        ResourceType(
            _CORE,
            ["v1"],
            "serviceaccounts",
            "serviceaccount",
            "ServiceAccount",
            True,
            ["sa"],
            extra_subresources=(
                Subresource("token", "TokenRequest", group="authentication.k8s.io", version="v1"),
            ),
        ),
        ResourceType(
            _CORE,
            ["v1"],
            "events",
            "event",
            "Event",
            True,
            ["ev"],
            field_selectors=(
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ),
        ),
    ]


def _apps_types() -> list[ResourceType]:
    apps = "apps"
    return [
        ResourceType(
            apps,
            ["v1"],
            "statefulsets",
            "statefulset",
            "StatefulSet",
            True,
            ["sts"],
            ["all"],
            status_subresource=True,
            generation=True,
            scale=ScaleSpec(),
        ),
        ResourceType(
            apps,
            ["v1"],
            "deployments",
            "deployment",
            "Deployment",
            True,
            ["deploy"],
            ["all"],
            status_subresource=True,
            generation=True,
            scale=ScaleSpec(),
        ),
    ]


def _networking_types() -> list[ResourceType]:
    """Leases, endpoint slices and network policies."""
    return [
        ResourceType("coordination.k8s.io", ["v1"], "leases", "lease", "Lease", True),
        ResourceType(
            "discovery.k8s.io",
            ["v1"],
            "endpointslices",
            "endpointslice",
            "EndpointSlice",
            True,
            field_selectors=("addressType",),
        ),
        ResourceType(
            "networking.k8s.io",
            ["v1"],
            "networkpolicies",
            "networkpolicy",
            "NetworkPolicy",
            True,
            ["netpol"],
            generation=True,
        ),
    ]


def _extension_types() -> list[ResourceType]:
    """events.k8s.io Events (a view of core Events) and CustomResourceDefinitions."""
    return [
        ResourceType(
            "events.k8s.io",
            ["v1"],
            "events",
            "event",
            "Event",
            True,
            ["ev"],
            field_selectors=(
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "reason",
                "reportingController",
                "type",
            ),
            storage_of=(_CORE, "events"),
        ),
        ResourceType(
            "apiextensions.k8s.io",
            ["v1"],
            "customresourcedefinitions",
            "customresourcedefinition",
            "CustomResourceDefinition",
            False,
            ["crd", "crds"],
            ["api-extensions"],
            status_subresource=True,
            generation=True,
            return_deleted_object=True,
        ),
    ]


def _rbac_types() -> list[ResourceType]:
    rbac = "rbac.authorization.k8s.io"
    return [
        ResourceType(rbac, ["v1"], "roles", "role", "Role", True),
        ResourceType(rbac, ["v1"], "rolebindings", "rolebinding", "RoleBinding", True),
        ResourceType(rbac, ["v1"], "clusterroles", "clusterrole", "ClusterRole", False),
        ResourceType(rbac, ["v1"], "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", False),
    ]


def _review_types() -> list[ResourceType]:
    authn, authz = "authentication.k8s.io", "authorization.k8s.io"
    return [
        ResourceType(authn, ["v1"], "tokenreviews", "tokenreview", "TokenReview", False, review=True),
        ResourceType(
            authz,
            ["v1"],
            "subjectaccessreviews",
            "subjectaccessreview",
            "SubjectAccessReview",
            False,
            review=True,
        ),
        ResourceType(
            authz,
            ["v1"],
            "selfsubjectaccessreviews",
            "selfsubjectaccessreview",
            "SelfSubjectAccessReview",
            False,
            review=True,
        ),
        ResourceType(
            authz,
            ["v1"],
            "localsubjectaccessreviews",
            "localsubjectaccessreview",
            "LocalSubjectAccessReview",
            True,
            review=True,
        ),
    ]
