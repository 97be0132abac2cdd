{{/* The standard labels (app.kubernetes.io/*), on every object the chart makes. */}}
{{- define "nfkube.labels" -}}
app.kubernetes.io/name: nfkube
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/part-of: nfkube
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end }}

{{/* What the DaemonSet selects its pods by: fixed for the release's life. */}}
{{- define "nfkube.selectorLabels" -}}
app.kubernetes.io/name: nfkube
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{/* The image, its tag defaulting to the chart's appVersion. */}}
{{- define "nfkube.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
