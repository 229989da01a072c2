{{/* The labels every object carries: the kustomize base's, and the release's. */}}
{{- define "streams-k8s.labels" -}}
app.kubernetes.io/part-of: streams-k8s
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The namespaces that get the per-namespace pieces (Roles, coordinator accounts, streams-api),
as a JSON list: watchNamespaces, else the release namespace. */}}
{{- define "streams-k8s.namespaces" -}}
{{- if .Values.watchNamespaces }}{{ uniq .Values.watchNamespaces | toJson }}{{ else }}{{ list .Release.Namespace | toJson }}{{ end }}
{{- end }}

{{/* The operator's --namespace: its own (the downward API), the list, or none (every namespace). */}}
{{- define "streams-k8s.namespaceArg" -}}
{{- if .Values.watchAllNamespaces }}{{ else if .Values.watchNamespaces }}--namespace={{ uniq .Values.watchNamespaces | join "," }}{{ else }}--namespace=$(POD_NAMESPACE){{ end }}
{{- end }}

{{- define "streams-k8s.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* What the operator touches in a namespace it watches (deploy/rbac.yaml's Role). */}}
{{- define "streams-k8s.watchRules" -}}
# Jobs and everything a job becomes
- apiGroups: ["streams.ibm.com"]
  resources:
    - streamsjobs
    - streamspes
    - streamshostpools
    - streamsprs
    - streamscrs
    - streamscros
    - streamsimports
    - streamsexports
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["streams.ibm.com"]
  resources:
    - streamsjobs/status
    - streamspes/status
    - streamshostpools/status
    - streamsprs/status
    - streamscrs/status
    - streamscros/status
    - streamsimports/status
    - streamsexports/status
  verbs: ["get", "update", "patch"]
# width autoscalers: read, their status written; widths set through /scale, as kubectl scale
- apiGroups: ["streams.ibm.com"]
  resources: ["streamsjobautoscalers"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["streams.ibm.com"]
  resources: ["streamsjobautoscalers/status", "streamsprs/scale"]
  verbs: ["get", "update", "patch"]
# per-job and per-PE ConfigMaps, the job-id counter; headless PE Services; PE pods
- apiGroups: [""]
  resources: ["configmaps", "services", "pods"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# consistent-region coordinators of dedicated mode, their API Services' NetworkPolicies
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
# bundle.github.secret tokens (read, by name); a TLSv1.2 job's transport Secret <job>-transport
# (created, read back by name; removed with the Job by the garbage collector). Never list/watch:
# the operator keeps no cache of Secrets.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create"]
# Events on Jobs and PEs (events.k8s.io/v1, or core/v1 where that is not served)
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "list", "watch"]
{{ include "streams-k8s.leaseRule" . }}
{{- end }}

{{/* Leases: leader election (in the release namespace) and the lock of each namespace's job-id
counter (controller/jobs/job_ids.py). */}}
{{- define "streams-k8s.leaseRule" -}}
# leader election; each namespace's job-id counter
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
{{- end }}

{{/* The PE pods the operator serves and notifies, as NetworkPolicy peers: those of the release
namespace (as the kustomize base), of each other watched namespace (.others), or of any (.all). */}}
{{- define "streams-k8s.pePeers" -}}
- podSelector:
    matchLabels:
      app: streams
      svc: pe
{{- if .all }}
  namespaceSelector: {}
{{- else }}
{{- range .others }}
- namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ . }}
  podSelector:
    matchLabels:
      app: streams
      svc: pe
{{- end }}
{{- end }}
{{- end }}
