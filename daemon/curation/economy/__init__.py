"""The economy lane: curator requests as one Message Batch at half price.

:mod:`.lane` submits the claimed batches, polls them and applies each result through the
pipeline's judging and commit, in claim order; :mod:`.wire` speaks the Message Batches
endpoints through the Bridge client.
"""
