{{/* The chart's name, at most 63 characters. */}}
{{- define "sidesync-rescuer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: the release name when it contains the chart's name
(`helm install sidesync-rescuer ...` gives sidesync-rescuer), else release-chart.
*/}}
{{- define "sidesync-rescuer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sidesync-rescuer.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels of every object. None is a sidesync.io label. */}}
{{- define "sidesync-rescuer.labels" -}}
helm.sh/chart: {{ include "sidesync-rescuer.chart" . }}
{{ include "sidesync-rescuer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sidesync-rescuer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sidesync-rescuer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The ServiceAccount's name. The ValidatingAdmissionPolicy writes it into a CEL string, so it
must be a DNS subdomain, as the API server requires anyway.
*/}}
{{- define "sidesync-rescuer.serviceAccountName" -}}
{{- $name := default (include "sidesync-rescuer.fullname" .) .Values.serviceAccount.name }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" $name) }}
{{- fail (printf "serviceAccount.name %q is not a DNS subdomain" $name) }}
{{- end }}
{{- $name }}
{{- end }}

{{/*
repository:tag, or repository@digest; the tag defaults to the chart's appVersion. The reference
goes into a CEL string of the ValidatingAdmissionPolicy and a command-line flag: only the
characters of image references, none that YAML or CEL would read.
*/}}
{{- define "sidesync-rescuer.imageRef" -}}
{{- $ref := "" }}
{{- if .image.digest }}
{{- $ref = printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- $ref = printf "%s:%s" .image.repository (default .appVersion .image.tag) }}
{{- end }}
{{- if not (regexMatch "^[A-Za-z0-9][A-Za-z0-9._:/@-]*$" $ref) }}
{{- fail (printf "image %q: not an image reference" $ref) }}
{{- end }}
{{- $ref }}
{{- end }}

{{- define "sidesync-rescuer.image" -}}
{{- include "sidesync-rescuer.imageRef" (dict "image" .Values.image "appVersion" .Chart.AppVersion) }}
{{- end }}

{{- define "sidesync-rescuer.sidesyncImage" -}}
{{- include "sidesync-rescuer.imageRef" (dict "image" .Values.sidesyncImage "appVersion" .Chart.AppVersion) }}
{{- end }}
