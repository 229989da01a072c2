"""Documents users write for every kind, and invalid Job specs with the words their errors must hold."""

from __future__ import annotations

from typing import Any

from streams_k8s.api import (
    ConsistentRegion,
    ConsistentRegionOperator,
    Export,
    HostPool,
    Import,
    JobAutoscaler,
    ParallelRegion,
    ProcessingElement,
    Resource,
)

USER_DOCUMENTS: dict[type[Resource], str] = {  # type: ignore[type-arg]
    ProcessingElement: """
        apiVersion: streams.ibm.com/v1
        kind: ProcessingElement
        metadata: {name: apps-parallel-2, namespace: streams, labels: {app: streams}}
        spec:
          id: 2
          contentId: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
          sabName: apps.parallel.Parallel.sab
          operators: ["Result.Region1.Op[0]", "Result.Region1.Op[1]"]
          regions: [0]
          imagePullPolicy: Always
          runWithValgrind: true
          placement:
            host: node-a
            coLocations: [together]
            exLocations: [apart]
            isolationLabels: [Sink]
            hostPoolLocation: {poolIndex: 1, inpoolIndex: 0}
          checkpointRepository:
            redis: {service: redis-ckpt, replicaCount: 1, shardCount: 3, shuffle: true}
        status:
          launchCount: 2
          connectivity: Full
          podName: apps-parallel-2-x7k2p
          conditions:
          - {type: Ready, status: "True", reason: PodRunning, lastTransitionTime: "2026-11-21T10:00:00Z"}
    """,
    HostPool: """
        apiVersion: streams.ibm.com/v1
        kind: HostPool
        metadata: {name: apps-hostpools-1}
        spec: {name: source_hosts, index: 1, tags: [source], membershipMode: exclusive, size: 2}
    """,
    ParallelRegion: """
        apiVersion: streams.ibm.com/v1
        kind: ParallelRegion
        metadata: {name: apps-parallel-0}
        spec: {index: 0, alias: Result.Region1, width: 3}
        status: {width: 2, selector: "streams.ibm.com/job=apps-parallel"}
    """,
    ConsistentRegion: """
        apiVersion: streams.ibm.com/v1
        kind: ConsistentRegion
        metadata: {name: apps-consistent-cr0}
        spec:
          regionIndex: 0
          trigger: periodic
          period: 2.5
          drainTimeout: 30
          maxConsecutiveResetAttempts: 3
          pesInRegion: [0, 1]
          operatorsToStartRegionMap: {Beacon: true}
          operatorsToTriggerMap: {Beacon: false}
        status:
          state: DRAINING
          currentSeqID: 4
          lastCompletedSeqID: 3
          peToCompletion: {"0": CheckpointDone, "1": None}
    """,
    ConsistentRegionOperator: """
        apiVersion: streams.ibm.com/v1
        kind: ConsistentRegionOperator
        metadata: {name: apps-consistent-consistent-region-operator}
        spec:
          jobName: apps-consistent
          jobUid: 0d9e1c6e-2f0b-4b8e-9a57-9f1c8f1d2a11
          numRegions: 1
          mode: shared
    """,
    Export: """
        apiVersion: streams.ibm.com/v1
        kind: Export
        metadata: {name: exporter-0-0}
        spec:
          jobId: 4
          peId: 0
          portId: 0
          type: ByProperties
          stream:
            exportOperName: Exp
            properties: [{name: topic, type: rstring, values: [weather]}]
    """,
    Import: """
        apiVersion: streams.ibm.com/v1
        kind: Import
        metadata: {name: importer-1-0}
        spec:
          jobId: 5
          peId: 1
          portId: 0
          portIndex: 0
          streams:
            nameBasedImports:
              "0": {applicationName: "apps.pubsub::Exporter", importOperName: Imp, streamName: Weather}
            filter: "temperature > 10"
    """,
    JobAutoscaler: """
        apiVersion: streams.ibm.com/v1
        kind: JobAutoscaler
        metadata: {name: wordcount, namespace: streams}
        spec:
          job: wordcount
          mode: Active
          targetUtilization: 0.75
          lowUtilization: 0.5
          highUtilization: 0.9
          intervalSeconds: 30
          stabilizationSeconds: 120
          scaleDownDelaySeconds: 600
          regions:
          - {alias: Score, min: 2, max: 40}
          - {alias: Parse, max: 8}
        status:
          widths: {Score: 4, Parse: 1}
          recommendation: {Score: 12, Parse: 2}
          reasons: ["sources' target 3000/s", "Score 4 -> 12: utilisation 290% over 90%"]
          lastWindow: "2026-11-21T10:00:30Z"
          history:
          - time: "2026-11-21T10:00:30Z"
            action: scaled
            widths: {Score: 12, Parse: 2}
            reason: "Score 4 -> 12"
          conditions:
          - {type: Valid, status: "True", reason: RegionsFound, lastTransitionTime: "2026-11-21T10:00:00Z"}
    """,
}


# Each case: a spec fragment merged into a valid Job spec, and the words the error must contain.
INVALID_JOB_SPECS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "fusion-automatic-and-manual",
        {"fusion": {"automatic": True, "manual": 3}},
        ["fusion.automatic", "fusion.manual"],
    ),
    (
        "fusion-legacy-and-manual",
        {"fusion": {"legacy": True, "manual": 2}},
        ["fusion.legacy", "fusion.manual"],
    ),
    ("fusion-manual-zero", {"fusion": {"manual": 0}}, ["fusion.manual", "greater than or equal to 1"]),
    ("fusion-type-unknown", {"fusion": {"type": "channelMagic"}}, ["fusion.type", "channelIsolation"]),
    (
        "threading-two-models",
        {"threadingModel": {"dedicated": True, "dynamic": {"threadCount": 2}}},
        ["threadingModel.dedicated", "threadingModel.dynamic"],
    ),
    (
        "bundle-file-and-github",
        {"bundle": {"name": "a.sab", "file": {"path": "/a.sab"}, "github": {"url": "https://x/a.sab"}}},
        ["bundle.file", "bundle.github"],
    ),
    ("bundle-name-with-path", {"bundle": {"name": "../../etc/passwd"}}, ["bundle.name", "pattern"]),
    ("bundle-without-name", {"bundle": {"file": {"path": "/a.sab"}}}, ["bundle.name", "Field required"]),
    (
        "github-secret-without-url",
        {"bundle": {"name": "a.sab", "github": {"secret": "token"}}},
        ["bundle.github.secret", "url"],
    ),
    (
        "pull-policy-unknown",
        {"bundle": {"name": "a.sab", "pullPolicy": "Sometimes"}},
        ["pullPolicy", "IfNotPresent"],
    ),
    ("image-pull-policy-unknown", {"imagePullPolicy": "Maybe"}, ["imagePullPolicy", "Never"]),
    ("build-type-unknown", {"processingElement": {"buildType": "fast"}}, ["buildType", "release"]),
    (
        "transport-security-unknown",
        {"processingElement": {"transportSecurityType": "SSLv3"}},
        ["transportSecurityType", "TLSv1.2"],
    ),
    ("timeout-zero", {"submissionTimeOutInSeconds": 0}, ["submissionTimeOutInSeconds", "greater than 0"]),
    (
        "cert-validity-negative",
        {"transportCertificateValidityInDays": -1},
        ["transportCertificateValidityInDays"],
    ),
    ("probe-interval-zero", {"processingElement": {"probeIntervalInSeconds": 0}}, ["probeIntervalInSeconds"]),
    (
        "bad-quantity",
        {"resources": {"requests": {"cpu": "two cores"}}},
        ["resources.requests.cpu", "quantity"],
    ),
    ("width-zero", {"parallelRegions": [{"alias": "R", "width": 0}]}, ["parallelRegions.0.width"]),
    ("typo-field", {"fusion": {"manaul": 3}}, ["fusion.manaul", "Extra inputs are not permitted"]),
    (
        "two-checkpoint-stores",
        {"processingElement": {"checkpointRepository": {"fileSystem": {}, "redis": {"service": "r"}}}},
        ["fileSystem", "redis"],
    ),
]


def invalid_job(fragment: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": "bad"},
        "spec": {"bundle": {"name": "a.sab"}, **fragment},
    }
