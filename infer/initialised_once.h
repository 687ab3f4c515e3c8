/* SPDX-License-Identifier: MIT */
/*
 * InitialisedOnce: an initialiser does not set a parameter twice before
 * training. A model that nests another pretrained-style model, each calling
 * post_init() (transformers#17877), applies the weight initialisation once
 * per nesting level: the generic initialiser runs again over modules done
 * already and can overwrite a special initialisation (GPT-2's scaled
 * c_proj) with no error, and start-up slows down.
 *
 * What the probes see: a parameter overwritten whole by zero_, under
 * no_grad (a leaf that requires grad) or through its .data (a tensor that
 * does not, sharing the parameter's storage), and the Python frames it was
 * called from. A parameter is known by its storage: a repetition through
 * .data is one once an operator updates or reads that storage as a tensor
 * that requires grad (the optimizer's first step), and is handed over then;
 * a storage never seen so (a buffer, a freed temporary's address reused) is
 * not judged.
 * Its initialiser is the first of those frames outside torch (the model's
 * _init_weights, not torch.nn.init.zeros_). The rule breaks where the same
 * initialiser sets the same parameter again, reached along another call
 * path through the program's own frames (the outer model's post_init
 * after the inner one's; torch's frames between do not count: a
 * parametrization that zeroes a temporary, then the parameter that took
 * its storage's place, is one initialisation), with no optimizer step of
 * the process in between. Another initialiser is no
 * repetition (a layer's own reset_parameters, then the model's
 * initialisation, as timm's vision transformers do), nor is the same path
 * (a model built again at the same address), nor a reset after training
 * (an optimizer step between).
 *
 * An example is an optimizer step, each one's parameters having been
 * initialised once by each initialiser, as TrainOverrideRan's are the
 * training forwards; a reference that repeats an initialisation makes no
 * rule.
 */
#ifndef TCHECK_INITIALISED_ONCE_H
#define TCHECK_INITIALISED_ONCE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/u64_map.h"
#include "infer_event.h"
#include "rule_support.h"
#include "rules.h"

/* The operator an initialisation is seen by. */
#define INITIALISED_ONCE_OPERATOR "aten::zero_"

/* Each process's parameters initialised since its last optimizer step. */
struct initialisation_tracker {
	struct u64_map processes; /* hash of (pipeline, pid) -> struct process_initialisations */
};

/*
 * An initialisation that repeats an earlier one ('first'): the same
 * initialiser, the same parameter, another call path.
 */
typedef void (*initialisation_repeated_fn)(void *context, const struct infer_event *again,
					   const struct infer_event *first);

void initialisation_tracker_init(struct initialisation_tracker *tracker);
void initialisation_tracker_free(struct initialisation_tracker *tracker);

/*
 * The initialiser in an operator's call_path: the first frame outside
 * torch, as a pointer into the path and its length; NULL when every frame
 * is torch's or none was read.
 */
const char *initialised_once_initialiser(const char *call_path, size_t *length);

/*
 * Follows one event of a process, in the process's order: an optimizer
 * step forgets what was initialised before it; an initialisation that
 * repeats one kept is handed to 'repeated'. 'cached' is the caller's slot
 * for the event's process (NULL: looked up each time). Returns 0 or -ENOMEM.
 */
int initialisation_observe(struct initialisation_tracker *tracker, const struct infer_event *event,
			   void **cached, initialisation_repeated_fn repeated, void *context);

/*
 * Finds the InitialisedOnce invariant of 'events' (a rule about
 * INITIALISED_ONCE_OPERATOR when the references step an optimizer and
 * repeat no initialisation) and adds it to 'rules'. Returns 0 or -ENOMEM.
 */
int infer_initialised_once(struct rule_set *rules, const struct infer_event *events, size_t count,
			   const struct rule_evidence *evidence);

#endif /* TCHECK_INITIALISED_ONCE_H */
