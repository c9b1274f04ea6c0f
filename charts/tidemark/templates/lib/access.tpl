{{/* A deployable's ServiceAccount. */}}
{{- define "tidemark.lib.serviceAccount" -}}
{{- $sa := .c.values.serviceAccount -}}
{{- if $sa.create }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "tidemark.serviceAccountName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
  {{- with $sa.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: {{ $sa.automountToken }}
{{- end }}
{{- end -}}

{{/* A deployable's Role in the release's namespace and its binding to the ServiceAccount. */}}
{{- define "tidemark.lib.rbac" -}}
{{- $rbac := .c.values.rbac -}}
{{- if and $rbac.create $rbac.rules }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .c.fullname }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
rules:
  {{- toYaml $rbac.rules | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .c.fullname }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ .c.fullname }}
subjects:
  - kind: ServiceAccount
    name: {{ include "tidemark.serviceAccountName" . }}
    namespace: {{ .root.Release.Namespace }}
{{- end }}
{{- end -}}
