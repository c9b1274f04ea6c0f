// Package v1alpha1 is the exports.tidemark.io/v1alpha1 API: the ExportJob resource that runs one CSV
// export of an authority's history into object storage.
//
// +kubebuilder:object:generate=true
// +groupName=exports.tidemark.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of ExportJob.
	GroupVersion = schema.GroupVersion{Group: "exports.tidemark.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
