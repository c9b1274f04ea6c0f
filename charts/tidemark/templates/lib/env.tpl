{{/* The container's environment: each TIDEMARK_* variable the deployable reads (its row of
files/mesh.yaml), set from the chart's values when the chart manages it and from the block's
config otherwise, then extraEnv. The context is (dict "root" $ "c" component "all" components "mesh" table). */}}
{{- define "tidemark.lib.env" -}}
{{- $root := .root -}}
{{- $c := .c -}}
{{- $v := $c.values -}}
{{- $reads := $c.mesh.reads -}}
{{- $g := $root.Values.global -}}
{{- $full := include "tidemark.fullname" $root -}}
{{- if has "TIDEMARK_LOG_LEVEL" $reads }}
- name: TIDEMARK_LOG_LEVEL
  value: {{ $v.logLevel | default $g.logLevel | quote }}
{{- end }}
{{- if has "TIDEMARK_PUBLIC_ADDR" $reads }}
- name: TIDEMARK_PUBLIC_ADDR
  value: {{ printf ":%d" (int $v.ports.public) | quote }}
{{- end }}
{{- if has "TIDEMARK_INTERNAL_ADDR" $reads }}
- name: TIDEMARK_INTERNAL_ADDR
  value: {{ printf ":%d" (int $v.ports.internal) | quote }}
{{- end }}
{{- if and (has "TIDEMARK_OTLP_ENDPOINT" $reads) $g.otlpEndpoint }}
- name: TIDEMARK_OTLP_ENDPOINT
  value: {{ $g.otlpEndpoint | quote }}
{{- end }}
{{- include "tidemark.lib.kafkaEnv" . }}
{{- if has "TIDEMARK_PG_URL" $reads }}
{{- $ref := include "tidemark.postgresRef" . | fromJson }}
- name: TIDEMARK_PG_URL
  valueFrom:
    secretKeyRef:
      name: {{ $ref.name }}
      key: {{ $ref.key }}
{{- end }}
{{- if has "TIDEMARK_PAGE_KEY" $reads }}
- name: TIDEMARK_PAGE_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $g.pageKey.existingSecret | default (printf "%s-page-key" $full) }}
      key: {{ ternary $g.pageKey.existingSecretKey "page-key" (ne $g.pageKey.existingSecret "") }}
{{- end }}
{{- if include "tidemark.readsRPC" $c }}
{{- $rpcSecret := $v.rpc.existingSecret | default (printf "%s-rpc" $c.fullname) }}
{{- $rpcVar := include "tidemark.rpcPrefix" $c }}
- name: {{ $rpcVar }}URL
  valueFrom:
    secretKeyRef:
      name: {{ $rpcSecret }}
      key: {{ ternary $v.rpc.urlKey "url" (ne $v.rpc.existingSecret "") }}
- name: {{ $rpcVar }}HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ $rpcSecret }}
      key: {{ ternary $v.rpc.headersKey "headers" (ne $v.rpc.existingSecret "") }}
      optional: true
{{- end }}
{{- if has "TIDEMARK_NAMESPACE" $reads }}
- name: TIDEMARK_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}
{{- if has "TIDEMARK_EXPORT_SOURCES" $reads }}
{{- $sources := list }}
{{- range $o := .all }}
{{- if $o.values.enabled }}
{{- range $ft := $o.mesh.exports }}
{{- $sources = append $sources (printf "%s=http://%s:%d" $ft $o.fullname (int $o.values.ports.internal)) }}
{{- end }}
{{- end }}
{{- end }}
- name: TIDEMARK_EXPORT_SOURCES
  value: {{ join "," $sources | quote }}
{{- end }}
{{- range $var, $target := .mesh.internalURLs }}
{{- if has $var $reads }}
{{- range $o := $.all }}
{{- if and (eq $o.name $target) $o.values.enabled }}
- name: {{ $var }}
  value: {{ printf "http://%s:%d" $o.fullname (int $o.values.ports.internal) | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if has "TIDEMARK_S3_ENDPOINT" $reads }}
- name: TIDEMARK_S3_ENDPOINT
  value: {{ $g.s3.endpoint | quote }}
- name: TIDEMARK_S3_BUCKET
  value: {{ $g.s3.bucket | quote }}
- name: TIDEMARK_S3_REGION
  value: {{ $g.s3.region | quote }}
- name: TIDEMARK_S3_TLS
  value: {{ $g.s3.tls | quote }}
{{- if $g.s3.publicURL }}
- name: TIDEMARK_S3_PUBLIC_URL
  value: {{ $g.s3.publicURL | quote }}
{{- end }}
{{- if include "tidemark.s3StaticKeys" $root }}
- name: TIDEMARK_S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $g.s3.existingSecret | default (printf "%s-s3" $full) }}
      key: {{ ternary $g.s3.accessKeyKey "access-key" (ne $g.s3.existingSecret "") }}
- name: TIDEMARK_S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $g.s3.existingSecret | default (printf "%s-s3" $full) }}
      key: {{ ternary $g.s3.secretKeyKey "secret-key" (ne $g.s3.existingSecret "") }}
{{- end }}
{{- if $g.s3.webIdentity.enabled }}
- name: AWS_WEB_IDENTITY_TOKEN_FILE
  value: {{ printf "%s/token" (include "tidemark.s3TokenPath" .) | quote }}
- name: AWS_ROLE_ARN
  value: {{ $g.s3.webIdentity.roleArn | quote }}
{{- end }}
{{- if $g.s3.stsEndpoint }}
- name: TIDEMARK_S3_STS_ENDPOINT
  value: {{ $g.s3.stsEndpoint | quote }}
{{- end }}
{{- if $g.s3.sessionDuration }}
- name: TIDEMARK_S3_SESSION_DURATION
  value: {{ $g.s3.sessionDuration | quote }}
{{- end }}
{{- end }}
{{- $managed := .mesh.managed }}
{{- $own := get $root.Values $c.name }}
{{- $ownConfig := dict }}
{{- if and (kindIs "map" $own) (kindIs "map" (get $own "config")) }}{{ $ownConfig = get $own "config" }}{{ end }}
{{- range $k := keys $v.config | sortAlpha }}
{{- $name := printf "TIDEMARK_%s" $k }}
{{- if hasKey $managed $name }}
{{- fail (printf "%s.config.%s: %s is set from %s" $c.name $k $name (get $managed $name)) }}
{{- end }}
{{- if has $name $reads }}
- name: {{ $name }}
  value: {{ include "tidemark.scalar" (get $v.config $k) | quote }}
{{- else if hasKey $ownConfig $k }}
{{- fail (printf "%s.config.%s: %s does not read %s" $c.name $k $c.name $name) }}
{{- end }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A value as an environment variable's text: numbers that are whole without an exponent (values
parse numbers as floats: 1000000 would print 1e+06). */}}
{{- define "tidemark.scalar" -}}
{{- if and (kindIs "float64" .) (eq . (float64 (int64 .))) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}


{{/* The Kafka variables of a deployable that reads them: brokers, prefixes, TLS (files of the mounted
Secret) and SASL (keys of the team's Secret). The context is (dict "root" $ "c" component). */}}
{{- define "tidemark.lib.kafkaEnv" -}}
{{- $reads := .c.mesh.reads -}}
{{- $g := .root.Values.global -}}
{{- if has "TIDEMARK_KAFKA_BROKERS" $reads }}
- name: TIDEMARK_KAFKA_BROKERS
  value: {{ join "," $g.kafka.brokers | quote }}
{{- end }}
{{- if and (has "TIDEMARK_KAFKA_TOPIC_PREFIX" $reads) $g.kafka.topicPrefix }}
- name: TIDEMARK_KAFKA_TOPIC_PREFIX
  value: {{ $g.kafka.topicPrefix | quote }}
{{- end }}
{{- if and (has "TIDEMARK_KAFKA_GROUP_PREFIX" $reads) $g.kafka.groupPrefix }}
- name: TIDEMARK_KAFKA_GROUP_PREFIX
  value: {{ $g.kafka.groupPrefix | quote }}
{{- end }}
{{- $ktls := $g.kafka.tls }}
{{- if and (has "TIDEMARK_KAFKA_TLS" $reads) $ktls.enabled }}
- name: TIDEMARK_KAFKA_TLS
  value: "true"
{{- if $ktls.existingSecret }}
- name: TIDEMARK_KAFKA_TLS_CA_FILE
  value: {{ printf "%s/ca.crt" (include "tidemark.kafkaTLSPath" .) | quote }}
{{- end }}
{{- if $ktls.clientCertificate }}
- name: TIDEMARK_KAFKA_TLS_CERT_FILE
  value: {{ printf "%s/tls.crt" (include "tidemark.kafkaTLSPath" .) | quote }}
- name: TIDEMARK_KAFKA_TLS_KEY_FILE
  value: {{ printf "%s/tls.key" (include "tidemark.kafkaTLSPath" .) | quote }}
{{- end }}
{{- if $ktls.serverName }}
- name: TIDEMARK_KAFKA_TLS_SERVER_NAME
  value: {{ $ktls.serverName | quote }}
{{- end }}
{{- end }}
{{- $sasl := $g.kafka.sasl }}
{{- /* A deployable's own user where it has one; the topics hook's is the release's. */}}
{{- $user := $sasl.existingSecret }}
{{- if and (not .topics) .c.values.kafkaUser.existingSecret }}{{ $user = .c.values.kafkaUser.existingSecret }}{{ end }}
{{- if and (has "TIDEMARK_KAFKA_SASL_MECHANISM" $reads) $sasl.mechanism }}
- name: TIDEMARK_KAFKA_SASL_MECHANISM
  value: {{ $sasl.mechanism | quote }}
{{- if eq $sasl.mechanism "AWS_MSK_IAM" }}
{{- if $sasl.awsRegion }}
- name: TIDEMARK_KAFKA_AWS_REGION
  value: {{ $sasl.awsRegion | quote }}
{{- end }}
{{- else }}
- name: TIDEMARK_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $user }}
      key: {{ $sasl.usernameKey }}
- name: TIDEMARK_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $user }}
      key: {{ $sasl.passwordKey }}
{{- end }}
{{- end }}
{{- end -}}
