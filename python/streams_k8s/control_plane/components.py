"""The command lines of etcd, kube-apiserver, kube-controller-manager and kube-scheduler, as a
small single-node cluster on loopback runs them.

What is left at its default is what a user's cluster has: kube-apiserver's default admission
plugins (NamespaceLifecycle, ServiceAccount, PodSecurity, ...), plus NodeRestriction as kubeadm
enables it; every default controller of kube-controller-manager, each under its own service
account (`--use-service-account-credentials`), as RBAC would restrict it on a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streams_k8s.control_plane.certificates import APISERVER_KUBELET_CLIENT, Pki

# Services get addresses from here (the `kubernetes` Service the first); pods from the nodes'
# podCIDRs, which the simulated nodes bring (no node IPAM: --allocate-node-cidrs is off).
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"
CLUSTER_CIDR = "10.244.0.0/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int


def etcd(binary: Path, data: Path, ports: Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(binary),
        f"--data-dir={data}",
        "--name=streams-k8s",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=streams-k8s={peer}",
        # A test bed thrown away after the run: no fsync makes writes ~10x faster on slow disks.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


# Every request's outcome (who, what, the answer's code) in the audit log, so a suite can hold a
# client to "no write of yours is refused". Metadata only: no bodies.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""


# kube-apiserver's connections into the cluster (a Service's or pod's proxy, a node's kubelet) go
# through an HTTP CONNECT proxy on a Unix socket, as Konnectivity's do: the simulated pods'
# addresses are not routable on this host, and whoever runs the pods serves the socket.
EGRESS_SELECTOR = """
apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
  - name: cluster
    connection:
      proxyProtocol: HTTPConnect
      transport:
        uds:
          udsName: {socket}
"""


def apiserver(binary: Path, pki: Pki, ports: Ports, audit: Path, egress: Path) -> list[str]:
    """`audit` is a directory: the policy is written there, the log goes to `audit.log` in it.
    `egress` is the socket of the cluster's egress proxy (EGRESS_SELECTOR)."""
    audit.mkdir(parents=True, exist_ok=True)
    policy = audit / "policy.yaml"
    policy.write_text(AUDIT_POLICY)
    selector = egress.with_suffix(".yaml")
    selector.write_text(EGRESS_SELECTOR.format(socket=egress))
    kubelet_client = pki.client(APISERVER_KUBELET_CLIENT)
    return [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        # The `kubernetes` Service would get the advertised address as its endpoint, and an
        # endpoint may not be a loopback address: it keeps no endpoints (nothing runs in-cluster).
        "--endpoint-reconciler-type=none",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={pki.serving.cert}",
        f"--tls-private-key-file={pki.serving.key}",
        f"--client-ca-file={pki.ca.cert}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--service-account-issuer={ISSUER}",
        f"--service-account-key-file={pki.service_account_public}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        f"--kubelet-client-certificate={kubelet_client.cert}",
        f"--kubelet-client-key={kubelet_client.key}",
        "--allow-privileged=true",
        f"--audit-policy-file={policy}",
        f"--audit-log-path={audit / 'audit.log'}",
        "--audit-log-format=json",
        # written before the answer is sent: what a test reads after a request is there
        "--audit-log-mode=blocking",
        f"--egress-selector-config-file={selector}",
        "--profiling=false",
        "--v=1",
    ]


def _delegated(kubeconfig: Path, port: int) -> list[str]:
    """Serving flags of kube-controller-manager and kube-scheduler: their own HTTPS port on
    loopback, authenticating and authorizing callers through the API server."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        # One of each: nothing to elect, and no Lease renewals to wait for at start.
        "--leader-elect=false",
        "--profiling=false",
        "--v=1",
    ]


def controller_manager(binary: Path, pki: Pki, kubeconfig: Path, ports: Ports) -> list[str]:
    return [
        str(binary),
        *_delegated(kubeconfig, ports.controller_manager),
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca.cert}",
        f"--cluster-signing-cert-file={pki.ca.cert}",
        f"--cluster-signing-key-file={pki.ca.key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--cluster-cidr={CLUSTER_CIDR}",
        "--allocate-node-cidrs=false",
    ]


def scheduler(binary: Path, kubeconfig: Path, ports: Ports) -> list[str]:
    return [str(binary), *_delegated(kubeconfig, ports.scheduler)]
