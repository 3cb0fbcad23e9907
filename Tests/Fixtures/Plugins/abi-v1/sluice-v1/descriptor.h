/*
 * Node descriptors: what a node type is, as data — its name in graph files, its kind, its
 * ports and their formats, and its parameters (name, type, range, default, unit, summary).
 * The host checks graph files against them and prints them in `sluice plugins`.
 *
 * Lifetime: every pointer reachable from a descriptor is owned by the plugin and stays valid
 * and unchanged from `init` until `deinit` (static data is the usual choice).
 */
#ifndef SLUICE_DESCRIPTOR_H
#define SLUICE_DESCRIPTOR_H

#include "common.h"

SLUICE_EXTERN_C_BEGIN

/* Where a node sits in a graph. */
typedef uint32_t sluice_node_kind_t;
enum {
    /* Turns text into PCM bytes on its own thread (provider.h). A graph source: no inputs,
     * one output of SLUICE_MEDIUM_BYTES. */
    SLUICE_NODE_PROVIDER = 1,
    /* Moves Float32 frames from inputs to outputs (processor.h): 1 … 16 inputs, 1 … 16
     * outputs, every port SLUICE_MEDIUM_FRAMES, all at one rate and channel count. */
    SLUICE_NODE_PROCESSOR = 2
};

/* A parameter's type. */
typedef uint32_t sluice_param_type_t;
enum {
    SLUICE_PARAM_NUMBER = 1,  /* a double within [minimum, maximum] */
    SLUICE_PARAM_INTEGER = 2, /* an integer within [minimum, maximum] */
    SLUICE_PARAM_BOOLEAN = 3,
    SLUICE_PARAM_STRING = 4,
    SLUICE_PARAM_PATH = 5,    /* a string; relative paths arrive resolved against the graph file's folder */
    SLUICE_PARAM_CHOICE = 6   /* one of `choices` */
};

/* A value. Which field counts depends on the parameter's type: `number` for NUMBER,
 * `integer` for INTEGER, `boolean` for BOOLEAN, `string` (UTF-8, NUL-terminated) for STRING,
 * PATH and CHOICE. The other fields are zero. */
typedef struct sluice_value {
    double number;
    int64_t integer;
    bool boolean;
    const char *string;
} sluice_value_t;

/* A parameter's value as the host gives it to `create_*` (factory.h). */
typedef struct sluice_param_value {
    const char *name;         /* the parameter's name, as declared */
    sluice_param_type_t type; /* as declared */
    sluice_value_t value;
} sluice_param_value_t;

/* One parameter of a node type. */
typedef struct sluice_param_descriptor {
    /* As written in graph files: lowercase letters, digits and '-', starting with a letter. */
    const char *name;
    sluice_param_type_t type;
    /* NUMBER and INTEGER: the inclusive range (integers exactly representable as double). */
    double minimum;
    double maximum;
    /* CHOICE: `choice_count` names; NULL and 0 for other types. */
    const char *const *choices;
    uint32_t choice_count;
    /* A graph file must give it. */
    bool required;
    /* Whether `default_value` is used when a graph leaves the parameter out; an optional
     * parameter without a default is then absent from `create_*`'s values. */
    bool has_default;
    sluice_value_t default_value;
    /* Shown beside values ("dB", "s", "Hz"), or NULL. */
    const char *unit;
    /* One line: what the parameter does. */
    const char *summary;
} sluice_param_descriptor_t;

/* One input or output. Every port of a node must be linked in a graph that uses it. */
typedef struct sluice_port_descriptor {
    /* The name used in links (`duck.speech`); the first port is also reached by the node's
     * name alone. Same rules as parameter names. */
    const char *name;
    sluice_medium_t medium; /* SLUICE_MEDIUM_* */
    /* One line: what flows here. */
    const char *summary;
} sluice_port_descriptor_t;

/* A node type. */
typedef struct sluice_node_descriptor {
    /* The `type:` in graph files, unique among every type a host loads (built-in nodes
     * included). Same rules as parameter names, with '.' also allowed. */
    const char *type_name;
    sluice_node_kind_t kind; /* SLUICE_NODE_* */
    /* One line: what the node does. */
    const char *summary;
    const sluice_port_descriptor_t *inputs;
    uint32_t input_count;
    const sluice_port_descriptor_t *outputs;
    uint32_t output_count;
    const sluice_param_descriptor_t *params;
    uint32_t param_count;
} sluice_node_descriptor_t;

SLUICE_EXTERN_C_END

#endif /* SLUICE_DESCRIPTOR_H */
