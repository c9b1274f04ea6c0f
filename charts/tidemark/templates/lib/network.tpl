{{/* A deployable's NetworkPolicy: its public port from the ingress controller only, its internal port
from the monitoring namespace and the release's own pods; egress to DNS, and to Kafka, PostgreSQL,
S3, the Kubernetes API and the chain's JSON-RPC only for a deployable that uses them (what it reads says which), and to the
internal ports of its peers only (the deployables whose internal routes or export streams it reads:
files/mesh.yaml, from the registry of platform/mesh), or of the whole release with meshEgress. */}}
{{- define "tidemark.lib.networkPolicy" -}}
{{- $np := .root.Values.networkPolicy -}}
{{- if $np.enabled }}
{{- $v := .c.values -}}
{{- $reads := .c.mesh.reads -}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ .c.fullname }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "tidemark.selectorLabels" . | nindent 6 }}
  policyTypes: [Ingress, Egress]
  ingress:
    {{- if gt (int $v.ports.public) 0 }}
    - from:
        - namespaceSelector:
            {{- toYaml $np.ingressController.namespaceSelector | nindent 12 }}
          podSelector:
            {{- toYaml $np.ingressController.podSelector | nindent 12 }}
      ports:
        - port: http
          protocol: TCP
    {{- if and .root.Values.tests.enabled (eq .c.mesh.kind "service") }}
    - from:
        - podSelector:
            matchLabels:
              {{- include "tidemark.releaseSelector" .root | nindent 14 }}
              app.kubernetes.io/component: test
      ports:
        - port: http
          protocol: TCP
    {{- end }}
    {{- end }}
    - from:
        - namespaceSelector:
            {{- toYaml $np.monitoring.namespaceSelector | nindent 12 }}
        - podSelector:
            matchLabels:
              {{- include "tidemark.releaseSelector" .root | nindent 14 }}
      ports:
        - port: http-internal
          protocol: TCP
    {{- with $v.networkPolicy.extraIngress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  egress:
    {{- $rules := list $np.egress.dns }}
    {{- if has "TIDEMARK_KAFKA_BROKERS" $reads }}{{ $rules = append $rules $np.egress.kafka }}{{ end }}
    {{- if has "TIDEMARK_PG_URL" $reads }}{{ $rules = append $rules $np.egress.postgres }}{{ end }}
    {{- if has "TIDEMARK_S3_ENDPOINT" $reads }}{{ $rules = append $rules $np.egress.s3 }}{{ end }}
    {{- if and (has "TIDEMARK_OTLP_ENDPOINT" $reads) .root.Values.global.otlpEndpoint }}{{ $rules = append $rules $np.egress.otlp }}{{ end }}
    {{- if $v.serviceAccount.automountToken }}{{ $rules = append $rules $np.egress.kubernetesAPI }}{{ end }}
    {{- if include "tidemark.readsRPC" .c }}{{ $rules = append $rules $np.egress.rpc }}{{ end }}
    {{- range $rules }}
    - ports:
        {{- toYaml .ports | nindent 8 }}
      {{- with .to }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- if or $v.networkPolicy.meshEgress .c.mesh.peers }}
    - to:
        - podSelector:
            matchLabels:
              {{- include "tidemark.releaseSelector" .root | nindent 14 }}
            {{- if not $v.networkPolicy.meshEgress }}
            matchExpressions:
              - key: app.kubernetes.io/component
                operator: In
                values: {{ .c.mesh.peers | toJson }}
            {{- end }}
      ports:
        - port: http-internal
          protocol: TCP
    {{- end }}
    {{- with $v.networkPolicy.extraEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
{{- end -}}
