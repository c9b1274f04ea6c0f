{{/* A deployable's Deployment; the context is (dict "root" $ "c" component "all" components "mesh" table). */}}
{{- define "tidemark.lib.deployment" -}}
{{- $root := .root -}}
{{- $c := .c -}}
{{- $v := $c.values -}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $c.fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ int $v.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  {{- with $v.strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "tidemark.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "tidemark.componentLabels" . | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/secrets: {{ include "tidemark.secretsChecksum" $root }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "tidemark.serviceAccountName" . }}
      automountServiceAccountToken: {{ $v.serviceAccount.automountToken }}
      {{- with $root.Values.global.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml $v.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ int $v.terminationGracePeriodSeconds }}
      topologySpreadConstraints:
        {{- if $v.topologySpreadConstraints }}
        {{- toYaml $v.topologySpreadConstraints | nindent 8 }}
        {{- else }}
        {{- range $key := list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
        - maxSkew: 1
          topologyKey: {{ $key }}
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "tidemark.selectorLabels" $ | nindent 14 }}
        {{- end }}
        {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.initContainers }}
      initContainers:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ $c.name }}
          image: {{ include "tidemark.image" . | quote }}
          imagePullPolicy: {{ $v.image.pullPolicy | default $root.Values.global.image.pullPolicy }}
          {{- with $v.extraArgs }}
          args:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          ports:
            {{- if gt (int $v.ports.public) 0 }}
            - name: http
              containerPort: {{ int $v.ports.public }}
              protocol: TCP
            {{- end }}
            - name: http-internal
              containerPort: {{ int $v.ports.internal }}
              protocol: TCP
          env:
            {{- include "tidemark.lib.env" . | trim | nindent 12 }}
          {{- with $v.extraEnvFrom }}
          envFrom:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- range $probe, $path := dict "startupProbe" "/healthz" "livenessProbe" "/healthz" "readinessProbe" "/readyz" }}
          {{ $probe }}:
            httpGet:
              path: {{ $path }}
              port: http-internal
            {{- toYaml (get $v $probe) | nindent 12 }}
          {{- end }}
          {{- if gt (int $v.preStopSleepSeconds) 0 }}
          lifecycle:
            preStop:
              sleep:
                seconds: {{ int $v.preStopSleepSeconds }}
          {{- end }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $v.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if include "tidemark.kafkaTLSVolume" . }}
            - name: kafka-tls
              mountPath: {{ include "tidemark.kafkaTLSPath" . }}
              readOnly: true
            {{- end }}
            {{- if include "tidemark.s3TokenVolume" . }}
            - name: s3-token
              mountPath: {{ include "tidemark.s3TokenPath" . }}
              readOnly: true
            {{- end }}
            {{- with $v.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
        {{- with $v.sidecars }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- if include "tidemark.kafkaTLSVolume" . }}
        - name: kafka-tls
          secret:
            secretName: {{ .root.Values.global.kafka.tls.existingSecret }}
        {{- end }}
        {{- if include "tidemark.s3TokenVolume" . }}
        {{- $wi := .root.Values.global.s3.webIdentity }}
        - name: s3-token
          projected:
            sources:
              - serviceAccountToken:
                  audience: {{ $wi.audience | quote }}
                  expirationSeconds: {{ int $wi.expirationSeconds }}
                  path: token
        {{- end }}
        {{- with $v.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end -}}

{{/* A deployable's Service: its public port (when it has one) and its internal port. */}}
{{- define "tidemark.lib.service" -}}
{{- $v := .c.values -}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .c.fullname }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
  {{- with $v.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $v.service.type }}
  selector:
    {{- include "tidemark.selectorLabels" . | nindent 4 }}
  ports:
    {{- if gt (int $v.ports.public) 0 }}
    - name: http
      port: {{ int $v.ports.public }}
      targetPort: http
      protocol: TCP
    {{- end }}
    - name: http-internal
      port: {{ int $v.ports.internal }}
      targetPort: http-internal
      protocol: TCP
{{- end -}}

{{/* A HorizontalPodAutoscaler on CPU and, optionally, consumer lag. */}}
{{- define "tidemark.lib.hpa" -}}
{{- $a := .c.values.autoscaling -}}
{{- if $a.enabled }}
{{- if gt (int $a.minReplicas) (int $a.maxReplicas) }}
{{- fail (printf "%s.autoscaling: minReplicas %d is more than maxReplicas %d" .c.name (int $a.minReplicas) (int $a.maxReplicas)) }}
{{- end }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .c.fullname }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .c.fullname }}
  minReplicas: {{ int $a.minReplicas }}
  maxReplicas: {{ int $a.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ int $a.targetCPUUtilizationPercentage }}
    {{- /* Lag exists only where a consumer group ingests: the edge reads without one and emits none. */}}
    {{- if and $a.consumerLag.enabled (eq .c.mesh.kind "service") .c.mesh.consumes }}
    - type: External
      external:
        metric:
          name: {{ $a.consumerLag.metricName }}
          selector:
            matchLabels:
              {{- toYaml ($a.consumerLag.selector | default (dict "service" .c.name)) | nindent 14 }}
        target:
          type: AverageValue
          averageValue: {{ $a.consumerLag.averageValue | quote }}
    {{- end }}
    {{- if and $a.connections.enabled (eq .c.mesh.kind "edge") }}
    - type: Pods
      pods:
        metric:
          name: {{ $a.connections.metricName }}
        target:
          type: AverageValue
          averageValue: {{ $a.connections.averageValue | quote }}
    {{- end }}
  {{- with $a.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* A PodDisruptionBudget, only when more than one replica runs (one replica and maxUnavailable 1
would let every pod go; maxUnavailable 0 would block node drains). */}}
{{- define "tidemark.lib.pdb" -}}
{{- $v := .c.values -}}
{{- $replicas := ternary (int $v.autoscaling.minReplicas) (int $v.replicas) (eq $v.autoscaling.enabled true) -}}
{{- if and $v.pdb.enabled (gt $replicas 1) }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .c.fullname }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tidemark.componentLabels" . | nindent 4 }}
spec:
  {{- /* A percentage stays a string: int of "50%" is 0, a budget that blocks every drain. */}}
  maxUnavailable: {{ if kindIs "string" $v.pdb.maxUnavailable }}{{ $v.pdb.maxUnavailable | quote }}{{ else }}{{ int $v.pdb.maxUnavailable }}{{ end }}
  selector:
    matchLabels:
      {{- include "tidemark.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}
