{{/* A deployable's ServiceMonitor, when the cluster serves the Prometheus Operator's API. The
metrics carry their own service label (the deployable's name), which honorLabels keeps over the
target's. */}}
{{- define "tidemark.lib.serviceMonitor" -}}
{{- $sm := .root.Values.serviceMonitor -}}
{{- if and $sm.enabled (.root.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor") }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .c.fullname }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
    {{- with $sm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "tidemark.selectorLabels" . | nindent 6 }}
  namespaceSelector:
    matchNames:
      - {{ .root.Release.Namespace }}
  endpoints:
    - port: http-internal
      path: /metrics
      honorLabels: true
      interval: {{ $sm.interval }}
      {{- with $sm.scrapeTimeout }}
      scrapeTimeout: {{ . }}
      {{- end }}
      {{- with $sm.relabelings }}
      relabelings:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $sm.metricRelabelings }}
      metricRelabelings:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
{{- end -}}
