{{- define "floe.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "floe.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component (agent or compactor): pass (list . "agent"). */}}
{{- define "floe.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The image: by digest when one is given, else by tag (the appVersion by default). */}}
{{- define "floe.image" -}}
{{- $repo := required "set image.repository: the registry and repository you pushed floe's image to (docs/deploy.md)" .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{ $repo }}@{{ .Values.image.digest }}
{{- else -}}
{{ $repo }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "floe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ .Values.serviceAccount.name | default (include "floe.fullname" .) }}
{{- else -}}
{{ .Values.serviceAccount.name | default "default" }}
{{- end -}}
{{- end -}}

{{/* Secrets: the chart's own when the value is set, else the existing one. */}}
{{- define "floe.postgresSecret" -}}
{{- if .Values.postgres.url -}}
{{ printf "%s-postgres" (include "floe.fullname" .) }}
{{- else -}}
{{ required "set postgres.url (the chart makes a Secret of it) or postgres.existingSecret (a Secret you made, holding the PostgreSQL URL)" .Values.postgres.existingSecret }}
{{- end -}}
{{- end -}}

{{- define "floe.postgresSecretKey" -}}
{{- if .Values.postgres.url -}}url{{- else -}}{{ .Values.postgres.existingSecretKey }}{{- end -}}
{{- end -}}

{{- define "floe.s3OwnSecret" -}}
{{- if or .Values.s3.accessKeyId .Values.s3.secretAccessKey -}}true{{- end -}}
{{- end -}}

{{- define "floe.s3Secret" -}}
{{- if include "floe.s3OwnSecret" . -}}
{{ printf "%s-s3" (include "floe.fullname" .) }}
{{- else -}}
{{ .Values.s3.existingSecret }}
{{- end -}}
{{- end -}}

{{/* The environment both commands read (`floe agent -h`, `floe compactor -h`). */}}
{{- define "floe.env" -}}
{{- if not .Values.s3.bucket -}}
{{- fail "set s3.bucket" -}}
{{- end -}}
- name: FLOE_POSTGRES_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "floe.postgresSecret" . }}
      key: {{ include "floe.postgresSecretKey" . }}
- name: FLOE_S3_BUCKET
  value: {{ .Values.s3.bucket | quote }}
{{- with .Values.s3.prefix }}
- name: FLOE_S3_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- with .Values.s3.endpoint }}
- name: FLOE_S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: AWS_REGION
  value: {{ .Values.s3.region | quote }}
{{- if include "floe.s3Secret" . }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ include "floe.s3Secret" . }}
      key: {{ if include "floe.s3OwnSecret" . }}AWS_ACCESS_KEY_ID{{ else }}{{ .Values.s3.accessKeyIdKey }}{{ end }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "floe.s3Secret" . }}
      key: {{ if include "floe.s3OwnSecret" . }}AWS_SECRET_ACCESS_KEY{{ else }}{{ .Values.s3.secretAccessKeyKey }}{{ end }}
{{- end }}
{{ include "floe.authEnv" . }}
{{- end -}}

{{/* Flags both commands share. */}}
{{- define "floe.commonArgs" -}}
{{- if .Values.s3.pathStyle }}
- -s3-path-style
{{- end }}
{{- if ne (.Values.s3.putChecksum | default "crc32c") "crc32c" }}
- -s3-put-checksum={{ .Values.s3.putChecksum }}
{{- end }}
{{- if .Values.s3.unsignedPayload }}
- -s3-unsigned-payload
{{- end }}
{{- end -}}


{{/* A Kubernetes quantity ("1Gi", "768Mi", "1G", 1073741824) in bytes. */}}
{{- define "floe.bytes" -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- int64 . -}}
{{- else -}}
{{- $q := toString . -}}
{{- $n := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- $unit := trimPrefix $n $q -}}
{{- if or (not $n) (not (hasKey $units $unit)) -}}
{{- fail (printf "memory quantity %q: want a number with an optional k, M, G, T, Ki, Mi, Gi or Ti" $q) -}}
{{- end -}}
{{- mulf (float64 $n) (get $units $unit) | floor | int64 -}}
{{- end -}}
{{- end -}}

{{/*
The Go runtime's settings of a container: GOMEMLIMIT at 90% of its memory
limit (required), GOMAXPROCS from its CPU request (the downward API rounds
it up to whole CPUs). Pass (list . "agent" $values).
*/}}
{{- define "floe.goRuntimeEnv" -}}
{{- $name := index . 1 -}}
{{- $v := index . 2 -}}
{{- $limit := dig "limits" "memory" "" $v.resources -}}
{{- if not $limit -}}
{{- fail (printf "set %s.resources.limits.memory: GOMEMLIMIT is 90%% of it" $name) -}}
{{- end -}}
- name: GOMEMLIMIT
  value: "{{ include "floe.softLimit" $limit }}B"
{{- if dig "requests" "cpu" "" $v.resources }}
- name: GOMAXPROCS
  valueFrom:
    resourceFieldRef:
      containerName: {{ $name }}
      resource: requests.cpu
      divisor: "1"
{{- end }}
{{- end -}}

{{/* 90% of a memory limit, in bytes. */}}
{{- define "floe.softLimit" -}}
{{- div (mul (include "floe.bytes" . | int64) 9) 10 -}}
{{- end -}}

{{/* Pod spread across zones and hosts: pass (list . "agent" $values). */}}
{{- define "floe.topologySpread" -}}
{{- $root := index . 0 -}}
{{- $v := index . 2 -}}
{{- if $v.topologySpreadConstraints -}}
{{ toYaml $v.topologySpreadConstraints }}
{{- else if $v.topologySpread.enabled -}}
{{- range list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
- maxSkew: {{ $v.topologySpread.maxSkew }}
  topologyKey: {{ . }}
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "floe.selector" (list $root (index $ 1)) | nindent 6 }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Pod annotations: a restart when a Secret's content changes. */}}
{{- define "floe.podAnnotations" -}}
{{- $root := index . 0 -}}
checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
{{- with $root.Values.existingSecretsVersion }}
checksum/existing-secrets-version: {{ . | quote }}
{{- end }}
{{- with (index . 1).podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* auth.* as the environment of agents and compactor (docs/security.md). */}}
{{- define "floe.authEnv" -}}
{{- with .Values.auth -}}
- name: FLOE_AUTH_ENABLED
  value: {{ .enabled | quote }}
{{- if .enabled }}
- name: FLOE_AUTH_SUPERUSERS
  value: {{ join "," .superusers | quote }}
- name: FLOE_AUTH_CERT_PRINCIPAL
  value: {{ .certPrincipal | quote }}
- name: FLOE_AUTH_HTTP_OPEN
  value: {{ join "," .httpOpen | quote }}
{{- end }}
{{- end }}
{{- end -}}
