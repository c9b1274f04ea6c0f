{{/* The chart's name, truncated for label values. */}}
{{- define "tidemark.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the prefix of every object's name. */}}
{{- define "tidemark.fullname" -}}
{{- $name := include "tidemark.name" . -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "tidemark.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "tidemark.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tidemark
{{- end -}}

{{/* The labels that select the release's pods. */}}
{{- define "tidemark.releaseSelector" -}}
app.kubernetes.io/name: {{ include "tidemark.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The mesh table (routes, export streams, variables), written by make generate. */}}
{{- define "tidemark.mesh" -}}
{{- .Files.Get "files/mesh.yaml" -}}
{{- end -}}

{{/* mergeInto (dict "dst" map "src" map): src's keys set over dst's, maps merged key by key. Unlike
sprig's merge, a false, 0 or "" of src wins over dst's value. */}}
{{- define "tidemark.mergeInto" -}}
{{- $dst := .dst -}}
{{- range $k, $v := .src -}}
{{- if and (kindIs "map" $v) (kindIs "map" (get $dst $k)) -}}
{{- include "tidemark.mergeInto" (dict "dst" (get $dst $k) "src" $v) -}}
{{- else -}}
{{- $_ := set $dst $k $v -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* components (dict "root" $ "out" dict): fills out with one entry per deployable of the mesh, in
its order: {name, mesh (its row of mesh.yaml), values (its block merged over defaults), fullname}. */}}
{{- define "tidemark.components" -}}
{{- $root := .root -}}
{{- $mesh := include "tidemark.mesh" $root | fromYaml -}}
{{- $list := list -}}
{{- range $m := $mesh.components -}}
{{- $v := dict -}}
{{- $_ := include "tidemark.mergeInto" (dict "dst" $v "src" (deepCopy $root.Values.defaults)) -}}
{{- $own := get $root.Values $m.name -}}
{{- if kindIs "map" $own -}}
{{- $_ := include "tidemark.mergeInto" (dict "dst" $v "src" (deepCopy $own)) -}}
{{- end -}}
{{- $list = append $list (dict "name" $m.name "mesh" $m "values" $v "fullname" (printf "%s-%s" (include "tidemark.fullname" $root) $m.name)) -}}
{{- end -}}
{{- $_ := set .out "list" $list -}}
{{- $_ := set .out "mesh" $mesh -}}
{{- end -}}

{{/* A deployable's labels; the context is (dict "root" $ "c" component). */}}
{{- define "tidemark.componentLabels" -}}
{{ include "tidemark.labels" .root }}
app.kubernetes.io/component: {{ .c.name }}
{{- end -}}

{{/* The labels that select a deployable's pods. */}}
{{- define "tidemark.selectorLabels" -}}
{{ include "tidemark.releaseSelector" .root }}
app.kubernetes.io/component: {{ .c.name }}
{{- end -}}

{{/* A deployable's image reference. */}}
{{- define "tidemark.image" -}}
{{- $g := .root.Values.global.image -}}
{{- $i := .c.values.image -}}
{{- $repo := $i.repository | default (printf "tidemark/%s" .c.name) -}}
{{- if $g.registry -}}{{- $repo = printf "%s/%s" $g.registry $repo -}}{{- end -}}
{{- if $i.digest -}}
{{- printf "%s@%s" $repo $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo ($i.tag | default $g.tag | default .root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* A deployable's ServiceAccount name. */}}
{{- define "tidemark.serviceAccountName" -}}
{{- if .c.values.serviceAccount.create -}}
{{- .c.values.serviceAccount.name | default .c.fullname -}}
{{- else -}}
{{- .c.values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The Secret and key of a deployable's PostgreSQL URL: {name, key}. */}}
{{- define "tidemark.postgresRef" -}}
{{- $d := .c.values.database -}}
{{- $g := .root.Values.global.postgres -}}
{{- if $d.existingSecret -}}
{{- dict "name" $d.existingSecret "key" $d.existingSecretKey | toJson -}}
{{- else if $d.url -}}
{{- dict "name" (printf "%s-postgres" .c.fullname) "key" "url" | toJson -}}
{{- else if $g.existingSecret -}}
{{- dict "name" $g.existingSecret "key" $g.existingSecretKey | toJson -}}
{{- else -}}
{{- dict "name" (printf "%s-postgres" (include "tidemark.fullname" .root)) "key" "url" | toJson -}}
{{- end -}}
{{- end -}}

{{/* What the chart's own Secrets hold, for the pods' checksum annotation (a rotated value rolls the
pods; the generated page key is not in it, as it never changes). */}}
{{- define "tidemark.secretsChecksum" -}}
{{- $g := .Values.global -}}
{{- $values := .Values | toYaml | fromYaml -}}
{{- $rpc := dict -}}
{{- range $m := (include "tidemark.mesh" . | fromYaml).components -}}
{{- with dig $m.name "rpc" dict $values }}{{ $_ := set $rpc $m.name . }}{{ end -}}
{{- end -}}
{{- dict "pg" $g.postgres "page" $g.pageKey.value "s3" (pick $g.s3 "accessKey" "secretKey" "existingSecret") "rpc" $rpc | toJson | sha256sum -}}
{{- end -}}

{{/* The prefix of the variables of a deployable that reads the chain over JSON-RPC, from its name
(TIDEMARK_INDEXER_RPC_, TIDEMARK_TX_RPC_): its block's rpc values set <prefix>URL and
<prefix>HEADERS, which tools/deploy holds each such deployable to read. The context is a component. */}}
{{- define "tidemark.rpcPrefix" -}}
{{- printf "TIDEMARK_%s_RPC_" (.name | upper | replace "-" "_") -}}
{{- end -}}

{{/* "true" when the component reads the chain over JSON-RPC: it gets the endpoint's Secret, its
variables and the NetworkPolicy's egress to networkPolicy.egress.rpc. The context is a component. */}}
{{- define "tidemark.readsRPC" -}}
{{- if has (printf "%sURL" (include "tidemark.rpcPrefix" .)) .mesh.reads }}true{{ end -}}
{{- end -}}

{{/* "true" when the pods get static S3 keys (given, or in an existing Secret); "" when they use their
cloud identity: a web identity, or the credential chain of the cloud's SDKs. */}}
{{- define "tidemark.s3StaticKeys" -}}
{{- $s3 := .Values.global.s3 -}}
{{- $static := or $s3.existingSecret $s3.accessKey $s3.secretKey -}}
{{- if and $static $s3.webIdentity.enabled -}}
{{- fail "global.s3.webIdentity.enabled with static keys (accessKey, secretKey or existingSecret): keys win over an identity, so give one or the other" -}}
{{- end -}}
{{- if and $s3.webIdentity.enabled (not $s3.webIdentity.roleArn) -}}
{{- fail "global.s3.webIdentity.enabled needs global.s3.webIdentity.roleArn, the role its token assumes" -}}
{{- end -}}
{{- if $static }}true{{ end -}}
{{- end -}}

{{/* Where the S3 web identity's token is projected. */}}
{{- define "tidemark.s3TokenPath" -}}
/var/run/secrets/tidemark/s3
{{- end -}}

{{/* "true" when the deployable of the context (dict "root" $ "c" component) mounts the S3 web
identity's token: it reads S3 and global.s3.webIdentity is enabled; "" otherwise. */}}
{{- define "tidemark.s3TokenVolume" -}}
{{- if and .root.Values.global.s3.webIdentity.enabled (has "TIDEMARK_S3_ENDPOINT" .c.mesh.reads) }}true{{ end -}}
{{- end -}}

{{/* Where the Kafka TLS Secret is mounted. */}}
{{- define "tidemark.kafkaTLSPath" -}}
/etc/tidemark/kafka-tls
{{- end -}}

{{/* "true" when the deployable of the context (dict "root" $ "c" component) mounts the Kafka TLS
Secret: it reads Kafka and the Secret is given; "" otherwise. A mechanism without its Secret fails. */}}
{{- define "tidemark.kafkaTLSVolume" -}}
{{- $k := .root.Values.global.kafka -}}
{{- if and $k.sasl.mechanism (ne $k.sasl.mechanism "AWS_MSK_IAM") (not $k.sasl.existingSecret) (or .topics (not .c.values.kafkaUser.existingSecret)) -}}
{{- fail "global.kafka.sasl.mechanism needs global.kafka.sasl.existingSecret, the Secret with the user's name and password" -}}
{{- end -}}
{{- if and $k.tls.clientCertificate (not $k.tls.existingSecret) -}}
{{- fail "global.kafka.tls.clientCertificate needs global.kafka.tls.existingSecret, the Secret with tls.crt and tls.key" -}}
{{- end -}}
{{- if and $k.tls.enabled $k.tls.existingSecret (has "TIDEMARK_KAFKA_TLS" .c.mesh.reads) -}}
true
{{- end -}}
{{- end -}}

{{/* "true" when this release manages the ExportJob CRD: the cluster has none yet, or the one it has
is this release's (Helm's ownership annotations name it). A CRD another release installed, or one
applied apart, is left alone, so that a second release in another namespace installs beside the
first. Under helm template (GitOps), which cannot look, it is always "true": set crds.enabled=false on
every release but one. */}}
{{- define "tidemark.ownsCRDs" -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" "exportjobs.exports.tidemark.io" -}}
{{- if not $crd -}}
true
{{- else -}}
{{- $a := $crd.metadata.annotations | default dict -}}
{{- if and (eq (get $a "meta.helm.sh/release-name") .Release.Name) (eq (get $a "meta.helm.sh/release-namespace") .Release.Namespace) }}true{{ end -}}
{{- end -}}
{{- end -}}
