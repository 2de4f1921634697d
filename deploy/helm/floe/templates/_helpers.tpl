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

{{- define "floe.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
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
{{ required "set postgres.url or postgres.existingSecret (a Secret with the PostgreSQL URL)" .Values.postgres.existingSecret }}
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
{{- end -}}

{{/* Flags both commands share. */}}
{{- define "floe.commonArgs" -}}
{{- if .Values.s3.pathStyle -}}
- -s3-path-style
{{- end }}
{{- end -}}
