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

{{/*
Where the serving certificate comes from: tls.source (self, cert-manager or secret). The
certManager.enabled of earlier charts still chooses: true is cert-manager, false is secret; it
may not contradict a tls.source other than the default.
*/}}
{{- define "sidesync-injector.certSource" -}}
{{- $source := .Values.tls.source }}
{{- if hasKey (default (dict) .Values.certManager) "enabled" }}
{{- $old := ternary "cert-manager" "secret" (eq (toString .Values.certManager.enabled) "true") }}
{{- if and (ne $source "self") (ne $source $old) }}
{{- fail (printf "certManager.enabled: %v means tls.source: %s, but tls.source is %s: drop certManager.enabled (tls.source replaces it)" .Values.certManager.enabled $old $source) }}
{{- end }}
{{- $source = $old }}
{{- end }}
{{- $source }}
{{- end }}

{{/* cert-manager's serving Certificate, and the Secret it writes. */}}
{{- define "sidesync-injector.certificateName" -}}
{{- printf "%s-tls" (include "sidesync-injector.fullname" .) }}
{{- end }}

{{/* The Secret the injector keeps its own certificates in (tls.source self). */}}
{{- define "sidesync-injector.certSecretName" -}}
{{- printf "%s-certs" (include "sidesync-injector.fullname" .) }}
{{- end }}

{{/* The Secret the injector reads its certificate files from: cert-manager's, or the user's. */}}
{{- define "sidesync-injector.tlsSecretName" -}}
{{- if eq (include "sidesync-injector.certSource" .) "cert-manager" }}
{{- include "sidesync-injector.certificateName" . }}
{{- else }}
{{- required "tls.secretName is required with tls.source: secret" .Values.tls.secretName }}
{{- end }}
{{- end }}

{{/*
The webhook configurations' caBundle: the user's PEM, base64-encoded, with tls.source secret;
else empty (cert-manager's CA injector, or the injector itself, fills it in at run time).
*/}}
{{- define "sidesync-injector.caBundle" -}}
{{- if eq (include "sidesync-injector.certSource" .) "secret" }}
{{- $pem := required "tls.caBundle (the PEM of the CA) is required with tls.source: secret" .Values.tls.caBundle }}
{{- if not (contains "-----BEGIN CERTIFICATE-----" $pem) }}
{{- fail "tls.caBundle must be PEM (-----BEGIN CERTIFICATE-----...), not base64: the chart encodes it" }}
{{- end }}
{{- $pem | b64enc }}
{{- end }}
{{- end }}

{{/* The webhook configurations' annotations, as YAML; empty when there are none. */}}
{{- define "sidesync-injector.webhookAnnotations" -}}
{{- $a := deepCopy (default (dict) .Values.webhook.annotations) }}
{{- if eq (include "sidesync-injector.certSource" .) "cert-manager" }}
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

{{/*
The system priority classes, which clusters may keep to kube-system unless a ResourceQuota of
the namespace admits them (https://kubernetes.io/docs/concepts/policy/resource-quotas/#limit-priority-class-consumption-by-default).
*/}}
{{- define "sidesync-injector.systemPriority" -}}
{{- if has .Values.priorityClassName (list "system-cluster-critical" "system-node-critical") }}true{{ end }}
{{- end }}
