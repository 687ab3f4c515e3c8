// SPDX-License-Identifier: MIT
/*
 * Optimizers taking turns (a GAN's discriminator and generator): rules
 * learned from a program with one optimizer, checked on a GAN whose steps
 * alternate between the two, healthy and with the mistakes people make in
 * one: a generator whose gradients are never cleared, a generator's
 * optimizer built over the discriminator's parameters, a generator that is
 * read every step and never trained. Known answers, built by hand.
 */
#include <string.h>

#include "infer/inference.h"
#include "infer/optimizer_turns.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

#define STEPS 12
#define WEIGHT 0x1000
#define GRADIENT 0x1100
#define DISCRIMINATOR_WEIGHT 0x2000
#define DISCRIMINATOR_GRADIENT 0x2100
#define GENERATOR_WEIGHT 0x3000
#define GENERATOR_GRADIENT 0x3100
#define DISCRIMINATOR_SHAPE "Float[4, 8]"
#define GENERATOR_SHAPE "Float[8, 2]"

enum gan {
	HEALTHY,
	GENERATOR_NOT_CLEARED,	   /* netG.zero_grad() left out */
	DISCRIMINATOR_PARAMETERS,  /* optimizer_g = Adam(netD.parameters()) */
	GENERATOR_NEVER_TRAINED,   /* only the discriminator's optimizer, every step */
	WGAN_FIVE_CRITIC_STEPS,	   /* healthy: five critic steps for each generator step */
	GENERATOR_FIRST_AT_STEP_9, /* a generator first trained more than a window late */
};

/* Whether a step is the generator's turn. */
static bool generator_turn_at(enum gan gan, int step)
{
	switch (gan) {
	case GENERATOR_NEVER_TRAINED:
		return false;
	case WGAN_FIVE_CRITIC_STEPS:
		return step % 6 == 5;
	case GENERATOR_FIRST_AT_STEP_9:
		return step >= 9 && step % 2 == 1;
	default:
		return step % 2 == 1;
	}
}

static void tensor_op(struct python_records *records, uint32_t pid, int step, uint64_t at,
		      const char *name, const char *role, uint64_t tensor, const char *shape,
		      bool parameter)
{
	struct trace_record *record =
		python_records_add(records, pid, step, at, 3, name, TRACE_PYTHON_TORCH_OP);
	bool read = strcmp(role, "weight") == 0;

	python_call_add_arg(
		record, (struct trace_python_arg){ .name = read ? "tensor:weight" : "tensor:self",
						   .type = TRACE_VALUE_INT,
						   .integer = (int64_t)tensor });
	python_call_add_arg(record,
			    (struct trace_python_arg){ .name = read ? "shape:weight" : "shape:self",
						       .type = TRACE_VALUE_STR,
						       .text = shape });
	python_call_add_arg(record, (struct trace_python_arg){ .name = read ? "requires_grad:weight"
									    : "requires_grad:self",
							       .type = TRACE_VALUE_BOOL,
							       .integer = parameter });
	if (strcmp(name, "aten::add_.Tensor") == 0)
		python_call_add_arg(record,
				    (struct trace_python_arg){ .name = "arg:alpha",
							       .type = TRACE_VALUE_FLOAT,
							       .real = parameter ? -0.1 : 1.0 });
}

/* The backward scope and the optimizer's step around what ran in them, records in end order. */
static void backward_scope(struct python_records *records, uint32_t pid, int step, uint64_t base)
{
	python_records_add(records, pid, step, base + 30, 50, "Autograd.backward#Engine.execute",
			   TRACE_PYTHON_TORCH_SCOPE);
}

static void step_scope(struct python_records *records, uint32_t pid, int step, uint64_t base)
{
	python_records_add(records, pid, step, base + 100, 100, "Optimizer.step#Adam.step",
			   TRACE_PYTHON_TORCH_SCOPE);
}

/* One step of a program with one optimizer: zero_grad, forward, backward, step. */
static void reference_step(struct python_records *records, uint32_t pid, int step)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);

	python_records_add(records, pid, step, base + 10, 5, "Optimizer.zero_grad#Adam.zero_grad",
			   TRACE_PYTHON_TORCH_SCOPE);
	tensor_op(records, pid, step, base + 20, "aten::linear", "weight", WEIGHT,
		  DISCRIMINATOR_SHAPE, true);
	tensor_op(records, pid, step, base + 40, "aten::add_.Tensor", "self", GRADIENT,
		  DISCRIMINATOR_SHAPE, false);
	backward_scope(records, pid, step, base);
	tensor_op(records, pid, step, base + 110, "aten::add_.Tensor", "self", WEIGHT,
		  DISCRIMINATOR_SHAPE, true);
	step_scope(records, pid, step, base);
}

/*
 * One step of a DCGAN loop, clearing with the models' own zero_grad() (in
 * place, torch 1.x): even steps the discriminator's turn (its gradients
 * zeroed, the generator's and its own forward, its update), odd steps the
 * generator's (its gradients zeroed, the discriminator's forward on the
 * fakes, a backward that adds into both models' gradients, its update);
 * a WGAN's generator takes every sixth step.
 */
static void gan_step(struct python_records *records, uint32_t pid, int step, enum gan gan)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	bool generator_turn = generator_turn_at(gan, step);
	uint64_t own_gradient = generator_turn ? GENERATOR_GRADIENT : DISCRIMINATOR_GRADIENT;
	const char *own_shape = generator_turn ? GENERATOR_SHAPE : DISCRIMINATOR_SHAPE;
	uint64_t updated = generator_turn && gan != DISCRIMINATOR_PARAMETERS ? GENERATOR_WEIGHT
									     : DISCRIMINATOR_WEIGHT;

	if (!(generator_turn && gan == GENERATOR_NOT_CLEARED))
		tensor_op(records, pid, step, base + 10, "aten::zero_", "self", own_gradient,
			  own_shape, false);
	if (!generator_turn)
		tensor_op(records, pid, step, base + 20, "aten::linear", "weight", GENERATOR_WEIGHT,
			  GENERATOR_SHAPE, true);
	tensor_op(records, pid, step, base + 22, "aten::linear", "weight", DISCRIMINATOR_WEIGHT,
		  DISCRIMINATOR_SHAPE, true);
	tensor_op(records, pid, step, base + 40, "aten::add_.Tensor", "self",
		  DISCRIMINATOR_GRADIENT, DISCRIMINATOR_SHAPE, false);
	if (generator_turn)
		tensor_op(records, pid, step, base + 42, "aten::add_.Tensor", "self",
			  GENERATOR_GRADIENT, GENERATOR_SHAPE, false);
	backward_scope(records, pid, step, base);
	tensor_op(records, pid, step, base + 110, "aten::add_.Tensor", "self", updated,
		  updated == GENERATOR_WEIGHT ? GENERATOR_SHAPE : DISCRIMINATOR_SHAPE, true);
	step_scope(records, pid, step, base);
}

struct tally {
	int at[(RELATION_LAST + 1)][STEPS];
	int total;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct tally *tally = context;

	tally->total++;
	if (violation->rule->relation < (RELATION_LAST + 1) && violation->step >= 0 &&
	    violation->step < STEPS)
		tally->at[violation->rule->relation][violation->step]++;
}

static int first_step(const struct tally *tally, uint32_t relation)
{
	for (int step = 0; step < STEPS; step++)
		if (tally->at[relation][step])
			return step;
	return -1;
}

static void check_gan(struct rule_set *set, enum gan gan, struct tally *tally)
{
	struct rule_checker *checker;
	struct python_records records;

	memset(tally, 0, sizeof(*tally));
	checker = rule_checker_new(set, count_violation, tally);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < STEPS; step++) {
		records.count = 0;
		gan_step(&records, 40, step, gan);
		for (size_t i = 0; i < records.count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records.at[i]), 0);
	}
	rule_checker_finish(checker);
	rule_checker_free(checker);
}

static bool has_rule(const struct rule_set *set, uint32_t relation, const char *first)
{
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == relation &&
		    (!first ||
		     strcmp(set->rules[i].first.name ? set->rules[i].first.name : "", first) == 0))
			return true;
	return false;
}

UNIT_TEST(optimizer_turns, a_gan_is_judged_turn_by_turn)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct python_records records;
	struct tally tally;

	for (uint32_t program = 0; program < 2; program++) {
		inference_set_pipeline(inference, program);
		for (int step = 0; step < STEPS; step++) {
			records.count = 0;
			reference_step(&records, 10 + program, step);
			for (size_t i = 0; i < records.count; i++)
				CU_ASSERT_EQUAL(inference_add(inference, &records.at[i]), 0);
		}
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	CU_ASSERT_TRUE_FATAL(has_rule(set, RELATION_API_SEQUENCE, ZERO_GRAD_FAMILY));
	CU_ASSERT_TRUE_FATAL(has_rule(set, RELATION_PARAMETERS_UPDATED, NULL));
	CU_ASSERT_TRUE_FATAL(has_rule(set, RELATION_TRAINABLE_UPDATED, NULL));

	/*
	 * Healthy: the generator's step adds into the discriminator's gradients
	 * and reads its weights, which its turn before changed; the first
	 * discriminator step reads the generator, trained in the turn after.
	 */
	check_gan(set, HEALTHY, &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/* The generator's gradients never cleared: its first step that adds into them. */
	check_gan(set, GENERATOR_NOT_CLEARED, &tally);
	CU_ASSERT_EQUAL(first_step(&tally, RELATION_API_SEQUENCE), 1);
	/*
	 * The generator's optimizer over the discriminator's parameters: every
	 * step changes those, no turns; the generator read and never changed.
	 */
	check_gan(set, DISCRIMINATOR_PARAMETERS, &tally);
	CU_ASSERT_EQUAL(first_step(&tally, RELATION_API_SEQUENCE), 1);
	CU_ASSERT_EQUAL(first_step(&tally, RELATION_TRAINABLE_UPDATED), 0);
	/* A generator read every step and trained by no turn: from step 0, said a step late. */
	check_gan(set, GENERATOR_NEVER_TRAINED, &tally);
	CU_ASSERT_EQUAL(first_step(&tally, RELATION_TRAINABLE_UPDATED), 0);
	CU_ASSERT_EQUAL(tally.at[RELATION_TRAINABLE_UPDATED][STEPS - 1], 1);
	/*
	 * A WGAN: the critic's first five steps read the generator, trained in
	 * its turn after them; the critic's steps after that turn read what it
	 * changed.
	 */
	check_gan(set, WGAN_FIVE_CRITIC_STEPS, &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/* A generator first trained nine steps later: step 0 waited past its window. */
	check_gan(set, GENERATOR_FIRST_AT_STEP_9, &tally);
	CU_ASSERT_EQUAL(first_step(&tally, RELATION_TRAINABLE_UPDATED), 0);
	CU_ASSERT_EQUAL(tally.at[RELATION_TRAINABLE_UPDATED][1], 0);
	CU_ASSERT_EQUAL(tally.at[RELATION_TRAINABLE_UPDATED][8], 0);

	inference_free(inference);
	rule_set_free(set);
}

static void note(struct optimizer_turn *turn, struct string_pool *pool, uint64_t tensor,
		 const char *shape)
{
	struct trace_record record = python_call_record(1, turn->step, 100, 3, "aten::add_.Tensor",
							TRACE_PYTHON_TORCH_OP);
	struct infer_event event;

	python_call_add_arg(&record, (struct trace_python_arg){ .name = "tensor:self",
								.type = TRACE_VALUE_INT,
								.integer = (int64_t)tensor });
	python_call_add_arg(&record, (struct trace_python_arg){ .name = "shape:self",
								.type = TRACE_VALUE_STR,
								.text = shape });
	python_call_add_arg(&record, (struct trace_python_arg){ .name = "requires_grad:self",
								.type = TRACE_VALUE_BOOL,
								.integer = 1 });
	CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &record, &event), 1);
	CU_ASSERT_TRUE(optimizer_turn_is_update(&event));
	CU_ASSERT_EQUAL(optimizer_turn_note(turn, &event), 0);
}

static uintptr_t shape_of(const char *shape)
{
	struct optimizer_turn turn;
	struct string_pool *pool = string_pool_new();
	uintptr_t hash;

	optimizer_turn_init(&turn, 0);
	note(&turn, pool, 1, shape);
	hash = (uintptr_t)u64_map_get(&turn.changed, 1);
	optimizer_turn_free(&turn);
	string_pool_free(pool);
	return hash;
}

UNIT_TEST(optimizer_turns, turns_alternate_and_gradients_match_by_shape_once_each)
{
	struct string_pool *pool = string_pool_new();
	struct optimizer_turn first, second, third;
	struct u64_map gradients;

	optimizer_turn_init(&first, 4);
	optimizer_turn_init(&second, 5);
	optimizer_turn_init(&third, 6);
	u64_map_init(&gradients);
	/* Nothing changed yet: no turn. */
	CU_ASSERT_FALSE(optimizer_turns_alternate(&first, &second));
	note(&first, pool, 0x10, "Float[24]");
	note(&first, pool, 0x20, "Float[24, 8]");
	note(&second, pool, 0x30, "Float[24]");
	note(&third, pool, 0x30, "Float[24]");
	CU_ASSERT_TRUE(optimizer_turns_alternate(&first, &second));
	/* The same parameter changed in both: one optimizer, no turns. */
	CU_ASSERT_FALSE(optimizer_turns_alternate(&second, &third));
	/* Not the step just before. */
	CU_ASSERT_FALSE(optimizer_turns_alternate(&first, &third));
	CU_ASSERT_TRUE(optimizer_turn_changed(&first, 0x20));
	CU_ASSERT_FALSE(optimizer_turn_changed(&first, 0x30));

	/* Two gradients of the first turn's two shapes: covered. */
	u64_map_put(&gradients, 0x11, (void *)shape_of("Float[24]"));
	u64_map_put(&gradients, 0x21, (void *)shape_of("Float[24, 8]"));
	CU_ASSERT_TRUE(optimizer_turn_shapes_cover(&first, &gradients));
	/* A second Float[24] gradient: the turn has one parameter of that shape. */
	u64_map_put(&gradients, 0x31, (void *)shape_of("Float[24]"));
	CU_ASSERT_FALSE(optimizer_turn_shapes_cover(&first, &gradients));
	u64_map_remove(&gradients, 0x31);
	/* A shape the turn did not change, or one not known. */
	u64_map_put(&gradients, 0x41, (void *)shape_of("Float[8, 2]"));
	CU_ASSERT_FALSE(optimizer_turn_shapes_cover(&first, &gradients));
	u64_map_put(&gradients, 0x41, (void *)OPTIMIZER_TURN_NO_SHAPE);
	CU_ASSERT_FALSE(optimizer_turn_shapes_cover(&first, &gradients));

	u64_map_free(&gradients);
	optimizer_turn_free(&first);
	optimizer_turn_free(&second);
	optimizer_turn_free(&third);
	string_pool_free(pool);
}
