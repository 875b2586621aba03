{{- define "junction.fullname" -}}
{{- printf "%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "junction.labels" -}}
app.kubernetes.io/name: junction
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: junction
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "junction.operatorSelector" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "junction.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "junction.softupfName" -}}
{{- printf "%s-softupf" (include "junction.fullname" .) -}}
{{- end -}}

{{- /* "true" when the chart issues the software UPF's P4Runtime certificates (p4runtime-pki.yaml). */ -}}
{{- define "junction.softupfIssues" -}}
{{- $s := .Values.softupf -}}
{{- if and $s.enabled (not $s.insecure) (not $s.tls.secretName) -}}true{{- end -}}
{{- end -}}

{{- /* The Secret with the software UPF's server certificate: the values' or the chart's. */ -}}
{{- define "junction.softupfTLSSecret" -}}
{{- default (printf "%s-tls" (include "junction.softupfName" .)) .Values.softupf.tls.secretName -}}
{{- end -}}

{{- /* Who issues the chart's certificates: certManager or helm (softupf.tls.issuer, auto resolved). */ -}}
{{- define "junction.pkiIssuer" -}}
{{- $i := .Values.softupf.tls.issuer -}}
{{- if eq $i "auto" -}}
{{- if .Capabilities.APIVersions.Has "cert-manager.io/v1" }}certManager{{ else }}helm{{ end -}}
{{- else -}}
{{- $i -}}
{{- end -}}
{{- end -}}
