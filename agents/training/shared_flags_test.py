"""Tests of the flag definitions that the scripts share."""

from absl import flags

from agents.training import shared_flags


def test_define_flags_keeps_the_first_definition_and_allows_override(
        monkeypatch):
    values = flags.FlagValues()
    calls = []

    def define(name, default, help_string, **kwargs):
        calls.append((name, default, help_string, kwargs))
        flags.DEFINE_string(
            name, default, help_string, flag_values=values, **kwargs)

    monkeypatch.setattr(shared_flags, 'FLAGS', values)
    shared_flags.define_flags(
        (define, 'first', 'a', 'First.'),
        (define, 'second', None, 'Second.', dict(short_name='s')))
    shared_flags.define_flags((define, 'first', 'b', 'Again.'))
    assert calls == [
        ('first', 'a', 'First.', dict(allow_override=True)),
        ('second', None, 'Second.',
         dict(allow_override=True, short_name='s'))]
    assert values['first'].default == 'a'


def test_run_flags_come_before_the_scripts_own(monkeypatch):
    definitions = []
    monkeypatch.setattr(
        shared_flags, 'define_flags',
        lambda *arguments: definitions.extend(arguments))
    own = (flags.DEFINE_integer, 'count', 1, 'How many.')
    shared_flags.define_run_flags('restore', 'Where the videos go.', own)
    assert definitions == [
        (flags.DEFINE_string, 'logdir', None, 'Run folder written by '
         'agents.scripts.train, holding config.yaml and checkpoints.'),
        (flags.DEFINE_string, 'outdir', None, 'Where the videos go.'),
        (flags.DEFINE_string, 'checkpoint', None, 'Checkpoint to restore, '
         'by name in the run folder (e.g. model.ckpt-100000) or by path; '
         'the latest when unset.'),
        own]
