{{/*
TLS from Secrets (values tls.*, docs/security.md). Each listener's Secret
(kubernetes.io/tls: tls.crt, tls.key, and ca.crt for clientAuth) is mounted
at /etc/floe/tls/LISTENER/, without subPath, so that the kubelet's updates
reach the files and floe re-reads them (no restart). The outbound CAs are
mounted at /etc/floe/tls/postgres/ and /etc/floe/tls/s3/.
*/}}

{{/* The TLS Secrets a component mounts: a list of [volume name, Secret, dir]. */}}
{{- define "floe.tlsMounts" -}}
{{- $root := index . 0 -}}{{- $comp := index . 1 -}}
{{- $t := $root.Values.tls -}}
{{- $out := list -}}
{{- if eq $comp "agent" -}}
{{- with $t.grpc.existingSecret }}{{ $out = append $out (list "tls-grpc" . "grpc") }}{{ end -}}
{{- with $t.kafka.existingSecret }}{{ $out = append $out (list "tls-kafka" . "kafka") }}{{ end -}}
{{- end -}}
{{- with $t.http.existingSecret }}{{ $out = append $out (list "tls-http" . "http") }}{{ end -}}
{{- with $t.postgresCA.existingSecret }}{{ $out = append $out (list "tls-postgres" . "postgres") }}{{ end -}}
{{- with $t.s3CA.existingSecret }}{{ $out = append $out (list "tls-s3" . "s3") }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The TLS flags of a component (list . "agent"|"compactor"). */}}
{{- define "floe.tlsArgs" -}}
{{- $root := index . 0 -}}{{- $comp := index . 1 -}}
{{- $t := $root.Values.tls -}}
{{- $d := "/etc/floe/tls" -}}
{{- if eq $comp "agent" -}}
{{- range $l := list "grpc" "kafka" -}}
{{- $v := index $t $l -}}
{{- if $v.existingSecret }}
- -{{ $l }}-tls-cert={{ $d }}/{{ $l }}/tls.crt
- -{{ $l }}-tls-key={{ $d }}/{{ $l }}/tls.key
{{- if $v.clientAuth }}
- -{{ $l }}-tls-client-ca={{ $d }}/{{ $l }}/ca.crt
{{- end }}
{{- else if $v.clientAuth }}
{{- fail (printf "tls.%s.clientAuth needs tls.%s.existingSecret (mutual TLS is TLS)" $l $l) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $t.http.existingSecret }}
- -http-tls-cert={{ $d }}/http/tls.crt
- -http-tls-key={{ $d }}/http/tls.key
{{- end }}
{{- if $t.s3CA.existingSecret }}
- -s3-ca-file={{ $d }}/s3/{{ $t.s3CA.key }}
{{- end }}
{{- end -}}

{{/* The volumeMounts of a component's TLS Secrets. */}}
{{- define "floe.tlsVolumeMounts" -}}
{{- range include "floe.tlsMounts" . | fromJsonArray }}
- name: {{ index . 0 }}
  mountPath: /etc/floe/tls/{{ index . 2 }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The volumes of a component's TLS Secrets. */}}
{{- define "floe.tlsVolumes" -}}
{{- range include "floe.tlsMounts" . | fromJsonArray }}
- name: {{ index . 0 }}
  secret:
    secretName: {{ index . 1 }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/* The HTTP listener's scheme: HTTPS with tls.http.existingSecret. */}}
{{- define "floe.httpScheme" -}}
{{- if .Values.tls.http.existingSecret }}HTTPS{{ else }}HTTP{{ end -}}
{{- end -}}
