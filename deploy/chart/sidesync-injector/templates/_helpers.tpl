{{/* The chart's name, at most 63 characters. */}}
{{- define "sidesync-injector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: the release name when it contains the chart's name
(`helm install sidesync-injector ...` gives sidesync-injector), else release-chart.
*/}}
{{- define "sidesync-injector.fullname" -}}
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

{{- define "sidesync-injector.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels of every object. None is a sidesync.io label. */}}
{{- define "sidesync-injector.labels" -}}
helm.sh/chart: {{ include "sidesync-injector.chart" . }}
{{ include "sidesync-injector.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sidesync-injector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sidesync-injector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sidesync-injector.serviceAccountName" -}}
{{- default (include "sidesync-injector.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* repository:tag, or repository@digest; the tag defaults to the chart's appVersion. */}}
{{- define "sidesync-injector.imageRef" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (default .appVersion .image.tag) }}
{{- end }}
{{- end }}

{{- define "sidesync-injector.image" -}}
{{- include "sidesync-injector.imageRef" (dict "image" .Values.image "appVersion" .Chart.AppVersion) }}
{{- end }}

{{- define "sidesync-injector.sidesyncImage" -}}
{{- include "sidesync-injector.imageRef" (dict "image" .Values.sidesyncImage "appVersion" .Chart.AppVersion) }}
{{- end }}

{{/* cert-manager's serving Certificate, and the Secret it writes. */}}
{{- define "sidesync-injector.certificateName" -}}
{{- printf "%s-tls" (include "sidesync-injector.fullname" .) }}
{{- end }}

{{/* The Secret the injector reads its certificate from: cert-manager's, or the user's. */}}
{{- define "sidesync-injector.tlsSecretName" -}}
{{- if .Values.certManager.enabled }}
{{- include "sidesync-injector.certificateName" . }}
{{- else }}
{{- required "tls.secretName is required when certManager.enabled is false" .Values.tls.secretName }}
{{- end }}
{{- end }}

{{/*
The webhook configurations' caBundle: empty with cert-manager (its CA injector fills it in,
from the annotation below), else the user's PEM, base64-encoded. Never patched at run time.
*/}}
{{- define "sidesync-injector.caBundle" -}}
{{- if not .Values.certManager.enabled }}
{{- $pem := required "tls.caBundle (the PEM of the CA) is required when certManager.enabled is false" .Values.tls.caBundle }}
{{- if not (contains "-----BEGIN CERTIFICATE-----" $pem) }}
{{- fail "tls.caBundle must be PEM (-----BEGIN CERTIFICATE-----...), not base64: the chart encodes it" }}
{{- end }}
{{- $pem | b64enc }}
{{- end }}
{{- end }}

{{/* The webhook configurations' annotations, as YAML; empty when there are none. */}}
{{- define "sidesync-injector.webhookAnnotations" -}}
{{- $a := deepCopy (default (dict) .Values.webhook.annotations) }}
{{- if .Values.certManager.enabled }}
{{- $_ := set $a "cert-manager.io/inject-ca-from" (printf "%s/%s" .Release.Namespace (include "sidesync-injector.certificateName" .)) }}
{{- end }}
{{- if $a }}
{{- toYaml $a }}
{{- end }}
{{- end }}

{{- define "sidesync-injector.webhookTimeoutSeconds" -}}
{{- $t := int (default 0 .Values.webhook.timeoutSeconds) }}
{{- if eq $t 0 }}{{ include "sidesync-injector.admission.defaultTimeoutSeconds" . }}{{ else }}{{ $t }}{{ end }}
{{- end }}
