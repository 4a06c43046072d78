{{/*
Chart name, overridable with nameOverride. Kubernetes names stop at 63 characters.
*/}}
{{- define "vllm.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Resource name prefix: fullnameOverride, else the release name, suffixed with the chart name
unless the release name already contains it (release "vllm" gives "vllm", not "vllm-vllm").
*/}}
{{- define "vllm.fullname" -}}
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

{{/*
Labels that identify the server pods. The Deployment, the Service and the PodDisruptionBudget
all select on exactly these, so the three can never disagree.
*/}}
{{- define "vllm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels on every resource.
*/}}
{{- define "vllm.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "vllm.selectorLabels" . }}
app.kubernetes.io/component: inference-server
app.kubernetes.io/version: {{ .Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Name of the weights claim: the existing one, or the one this chart creates.
*/}}
{{- define "vllm.claimName" -}}
{{- default (printf "%s-models" (include "vllm.fullname" .)) .Values.modelVolume.existingClaim }}
{{- end }}

{{/*
The server's command line. Numbers go through `int` because Helm holds values as floats and
would print 1000000 as 1e+06. Both engines get the flags they share with vLLM; only vLLM gets
the model source and the flags that touch weights or GPU memory.
*/}}
{{- define "vllm.command" -}}
{{- if eq .Values.engine "vllm" }}
- vllm
- serve
{{- else }}
- fake-server
- serve
{{- end }}
{{- end }}

{{- define "vllm.args" -}}
{{- if eq .Values.engine "vllm" }}
- {{ .Values.model.source | quote }}
{{- end }}
- --served-model-name
- {{ .Values.model.servedModelName | quote }}
- --max-model-len
- {{ int .Values.model.maxModelLen | quote }}
- --host
- "0.0.0.0"
- --port
- {{ int .Values.server.port | quote }}
{{- if eq .Values.engine "vllm" }}
- --download-dir
- {{ .Values.modelVolume.mountPath | quote }}
- --gpu-memory-utilization
- {{ .Values.model.gpuMemoryUtilization | quote }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
The default autoscaling query: requests waiting in vLLM's queue for this model, summed over pods.
*/}}
{{- define "vllm.autoscalingQuery" -}}
{{- if .Values.autoscaling.query }}
{{- .Values.autoscaling.query }}
{{- else }}
{{- printf "sum(vllm:num_requests_waiting{model_name=%q})" .Values.model.servedModelName }}
{{- end }}
{{- end }}
